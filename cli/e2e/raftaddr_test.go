package e2e

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
)

// TestRestartedServerUpdatesItsRaftAddress: a server restarted on a new
// raft port takes its new address into the registry's raft configuration,
// through the leader, and `harn mesh raft --json` on every node shows the
// new address with no stale marker within a bounded wait.
func TestRestartedServerUpdatesItsRaftAddress(t *testing.T) {
	nodes := startServers(t, 3)
	leader := leaderOf(t, nodes)
	m := byName(nodes, leader) // the hardest case: the leader moves
	old := m.raftStr
	m.stop()
	m.raft = freePorts(t, 1)[0]
	m.raftStr = net.JoinHostPort("127.0.0.1", strconv.Itoa(m.raft))
	m.start()
	eventually(t, meshTimeout, "the new raft address everywhere, not stale", func() (bool, string) {
		for _, o := range nodes {
			r, ok, why := o.raftState()
			if !ok {
				return false, why
			}
			var found bool
			for _, s := range r.Servers {
				if s.ID != m.name {
					if s.Stale {
						return false, fmt.Sprintf("%s: %s marked stale: %+v", o.name, s.ID, r.Servers)
					}
					continue
				}
				found = true
				if s.Addr != m.raftStr || s.Stale || !s.Voter {
					return false, fmt.Sprintf("%s: %s at %s (old %s, want %s), stale %v, voter %v", o.name, m.name, s.Addr, old, m.raftStr, s.Stale, s.Voter)
				}
			}
			if !found {
				return false, fmt.Sprintf("%s: %s not in %+v", o.name, m.name, r.Servers)
			}
		}
		return true, ""
	})
	human := nodes[0].ok("mesh", "raft")
	if strings.Contains(human, "stale") || !strings.Contains(human, m.raftStr) {
		t.Errorf("mesh raft after the update:\n%s", human)
	}
}
