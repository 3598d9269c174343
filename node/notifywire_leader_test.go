package node

import (
	"testing"

	"github.com/harn-dev/harn/mesh"
)

// TestWithoutALeaderTheFirstReachableServerAnnounces: with no registry
// leader, exactly one of the servers that see the same members announces
// the unreachable ones: the first by name of those it can reach.
func TestWithoutALeaderTheFirstReachableServerAnnounces(t *testing.T) {
	srv := func(st mesh.Status) mesh.Member {
		return mesh.Member{Status: st, Meta: mesh.NodeMeta{Role: mesh.RoleServer}}
	}
	cli := func(st mesh.Status) mesh.Member {
		return mesh.Member{Status: st, Meta: mesh.NodeMeta{Role: mesh.RoleClient}}
	}
	// A 2-server mesh with s0 down: s1 announces.
	two := map[string]mesh.Member{"s0": srv(mesh.StatusDead), "s1": srv(mesh.StatusAlive)}
	if !firstServer("s1", two) {
		t.Fatal("s1 is the only reachable server and does not announce")
	}
	// Three servers, s0 down, s1 and s2 up: s1 alone announces.
	three := map[string]mesh.Member{"s0": srv(mesh.StatusDead), "s1": srv(mesh.StatusAlive), "s2": srv(mesh.StatusAlive),
		"a0": cli(mesh.StatusAlive)}
	var announcers []string
	for _, self := range []string{"s1", "s2"} {
		if firstServer(self, three) {
			announcers = append(announcers, self)
		}
	}
	if len(announcers) != 1 || announcers[0] != "s1" {
		t.Fatalf("announcers %v, want [s1]", announcers)
	}
}
