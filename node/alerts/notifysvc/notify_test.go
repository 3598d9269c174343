package notifysvc

import (
	"log/slog"
	"testing"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/ledger"
	"github.com/harn-dev/harn/raftstore"
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
	if !firstServer("s1", two, reachable) {
		t.Fatal("s1 is the only reachable server and does not announce")
	}
	// Three servers, s0 down, s1 and s2 up: s1 alone announces.
	three := map[string]mesh.Member{"s0": srv(mesh.StatusDead), "s1": srv(mesh.StatusAlive), "s2": srv(mesh.StatusAlive),
		"a0": cli(mesh.StatusAlive)}
	var announcers []string
	for _, self := range []string{"s1", "s2"} {
		if firstServer(self, three, reachable) {
			announcers = append(announcers, self)
		}
	}
	if len(announcers) != 1 || announcers[0] != "s1" {
		t.Fatalf("announcers %v, want [s1]", announcers)
	}
}

func reachable(m mesh.Member, known bool) bool {
	return known && (m.Status == mesh.StatusAlive || m.Status == mesh.StatusSuspect)
}

// TestARestartedNodeHasItsWebhooksAtOnce: the last webhook set a node
// applied is kept in its ledger, and a restarted node whose registry
// replica holds none yet (it is still catching up) has them at once.
func TestARestartedNodeHasItsWebhooksAtOnce(t *testing.T) {
	dir := t.TempDir()
	l, err := ledger.Open(ledger.DefaultConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	s := &Service{Deps: Deps{Meta: l, Log: slog.New(slog.DiscardHandler)}}
	hooks := []raftstore.NotifyHook{{ID: "wh-1", Spec: []byte(`{"url":"https://ntfy.example/x","format":"ntfy"}`)}}
	s.saveWebhooks(hooks, 7)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, err := ledger.Open(ledger.DefaultConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	// What alertsMesh.Webhooks answers while the registry replica holds
	// no webhook set yet.
	got, at := (&Service{Deps: Deps{Meta: l2}}).savedWebhooks()
	if at != 7 || len(got) != 1 || got[0].ID != "wh-1" || string(got[0].Spec) != string(hooks[0].Spec) {
		t.Fatalf("after the restart: %v at %d, want wh-1 at 7", got, at)
	}
}
