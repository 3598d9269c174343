package upkeep

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

// RecordToolGroup is the tool boxes' OnGroup: the group is recorded
// before its command runs (a full disk refuses the tool), and removed
// when it is gone.
func (k *Keeper) RecordToolGroup(g procguard.Group) (func(), error) {
	b, err := json.Marshal(g)
	if err != nil {
		return nil, err
	}
	key := toolGroupKey(g)
	if err := k.Ledger.PutKV(toolGroupSpace, key, b); err != nil {
		return nil, err
	}
	return func() {
		if err := k.Ledger.DeleteKV(toolGroupSpace, key); err != nil {
			k.Log.Warn("tool group record not removed", "pgid", g.PGID, "err", err)
		}
	}, nil
}

// ReapToolGroups kills what is left of the tool groups the node's
// previous run recorded and did not see end (it died: on Linux the
// guards killed them already; elsewhere this is what does), and forgets
// them. It runs at start, before any task.
func (k *Keeper) ReapToolGroups() {
	var groups []procguard.Group
	var keys [][]byte
	err := k.Ledger.ScanKV(toolGroupSpace, nil, func(key, v []byte) error {
		var g procguard.Group
		if json.Unmarshal(v, &g) == nil {
			groups = append(groups, g)
		}
		keys = append(keys, append([]byte(nil), key...))
		return nil
	})
	if err != nil {
		k.Log.Warn("reading the tool groups the previous run left", "err", err)
		return
	}
	reaped := 0
	for _, g := range groups {
		if procguard.Reap(g) {
			reaped++
		}
	}
	for _, key := range keys {
		if err := k.Ledger.DeleteKVSync(toolGroupSpace, key); err != nil {
			k.Log.Warn("tool group record not removed", "err", err)
		}
	}
	if len(groups) > 0 {
		k.Log.Info("reaped the tool process groups the previous run left", "recorded", len(groups), "killed", reaped)
	}
}
