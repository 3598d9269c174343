package node

import (
	"encoding/json"
	"fmt"

	"github.com/harn-dev/harn/util/procguard"
)

// toolGroupSpace is the ledger keyspace of the process groups of harn's
// own tools (the shell's commands, the stdio MCP servers) while they run:
// each is written before its command runs and deleted once it is gone, so
// that a node that died leaves the list of what it started. Neither write
// waits for an fsync: a kill -9 loses only what the WAL writer had not
// written yet (milliseconds), and on Linux the guard kills the group
// whatever the record says.
const toolGroupSpace = "toolgroups"

func toolGroupKey(g procguard.Group) []byte { return fmt.Appendf(nil, "%d/%d", g.PGID, g.Start) }

// recordToolGroup is the tool boxes' OnGroup: the group is recorded
// before its command runs (a full disk refuses the tool), and removed
// when it is gone.
func (n *Node) recordToolGroup(g procguard.Group) (func(), error) {
	b, err := json.Marshal(g)
	if err != nil {
		return nil, err
	}
	k := toolGroupKey(g)
	if err := n.ledger.PutKV(toolGroupSpace, k, b); err != nil {
		return nil, err
	}
	return func() {
		if err := n.ledger.DeleteKV(toolGroupSpace, k); err != nil {
			n.log.Warn("tool group record not removed", "pgid", g.PGID, "err", err)
		}
	}, nil
}

// reapToolGroups kills what is left of the tool groups the node's
// previous run recorded and did not see end (it died: on Linux the
// guards killed them already; elsewhere this is what does), and forgets
// them. It runs at start, before any task.
func (n *Node) reapToolGroups() {
	var groups []procguard.Group
	var keys [][]byte
	err := n.ledger.ScanKV(toolGroupSpace, nil, func(k, v []byte) error {
		var g procguard.Group
		if json.Unmarshal(v, &g) == nil {
			groups = append(groups, g)
		}
		keys = append(keys, append([]byte(nil), k...))
		return nil
	})
	if err != nil {
		n.log.Warn("reading the tool groups the previous run left", "err", err)
		return
	}
	reaped := 0
	for _, g := range groups {
		if procguard.Reap(g) {
			reaped++
		}
	}
	for _, k := range keys {
		if err := n.ledger.DeleteKVSync(toolGroupSpace, k); err != nil {
			n.log.Warn("tool group record not removed", "err", err)
		}
	}
	if len(groups) > 0 {
		n.log.Info("reaped the tool process groups the previous run left", "recorded", len(groups), "killed", reaped)
	}
}
