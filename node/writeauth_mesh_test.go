package node

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/apigrpc"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/raftstore"
)

func encodeCmd(t *testing.T, cmd raftstore.Command) []byte {
	t.Helper()
	b, err := raftstore.EncodeCommand(cmd)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// applyAs forwards cmd to the leader over cl (a member's mutual-TLS
// connection) and returns the status code of the answer.
func applyAs(t *testing.T, cl apigrpc.ClusterClient, cmd raftstore.Command) codes.Code {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := cl.Apply(ctx, &api.ApplyRequest{Command: encodeCmd(t, cmd)})
	return status.Code(err)
}

// TestNodeCertificateCannotClaimReleaseOrChangeWebhooksOfOthers drives each
// op authorizeWrite used to skip with a node-role certificate of a real
// member: against another node's session and the mesh's webhooks it is
// refused; on its own session it works.
func TestNodeCertificateCannotClaimReleaseOrChangeWebhooksOfOthers(t *testing.T) {
	m, _ := startTrustMesh(t)
	n0 := m.nodes[0]
	n1 := m.join("tw1", m.token(false, 0, 0), false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	now := time.Now()
	for _, cmd := range []raftstore.Command{
		raftstore.UpsertCommand(raftstore.Upsert{SessionID: "theirs", TS: now, Identity: &raftstore.IdentityPatch{Node: "tw0"}}),
		raftstore.ClaimCmd("theirs", "tw0", "repo", now, "a.go"),
		raftstore.NotifySetCommand("wh-1", []byte(`{"url":"https://example.com/a"}`)),
	} {
		if _, err := n0.cl.Apply(ctx, cmd); err != nil {
			t.Fatal(err)
		}
	}
	cl := asMember(t, n1, n0)
	for name, cmd := range map[string]raftstore.Command{
		"release of another session's claims":        raftstore.ReleaseCmd("theirs", "", true),
		"release of another session's path":          raftstore.ReleaseCmd("theirs", "repo", false, "a.go"),
		"claim in another session's name":            raftstore.ClaimCmd("theirs", "tw1", "repo", now, "b.go"),
		"claim in another session's and node's name": raftstore.ClaimCmd("theirs", "tw0", "repo", now, "b.go"),
		"claim naming another node":                  raftstore.ClaimCmd("new", "tw0", "repo", now, "c.go"),
		"webhook added":                              raftstore.NotifySetCommand("wh-2", []byte(`{"url":"http://127.0.0.1/x"}`)),
		"webhook replaced":                           raftstore.NotifySetCommand("wh-1", []byte(`{"url":"http://127.0.0.1/x"}`)),
		"webhook removed":                            raftstore.NotifyRemoveCommand("wh-1"),
	} {
		if code := applyAs(t, cl, cmd); code != codes.PermissionDenied {
			t.Errorf("%s: answered %v, want PermissionDenied", name, code)
		}
	}
	if c, ok := n0.cl.Registry().ClaimOf("repo", "a.go"); !ok || c.SessionID != "theirs" {
		t.Fatalf("the claim on a.go changed: %+v %v", c, ok)
	}
	for _, p := range []string{"b.go", "c.go"} {
		if c, ok := n0.cl.Registry().ClaimOf("repo", p); ok {
			t.Fatalf("a refused claim on %s is held: %+v", p, c)
		}
	}
	if hooks, _ := n0.cl.Registry().NotifyHooks(); len(hooks) != 1 || hooks[0].ID != "wh-1" || !strings.Contains(string(hooks[0].Spec), "example.com") {
		t.Fatalf("the webhooks changed: %+v", hooks)
	}
	// The legitimate owner's ops still work, forwarded.
	for name, cmd := range map[string]raftstore.Command{
		"own session": raftstore.UpsertCommand(raftstore.Upsert{SessionID: "mine", TS: now, Identity: &raftstore.IdentityPatch{Node: "tw1"}}),
		"own claim":   raftstore.ClaimCmd("mine", "tw1", "repo", now, "d.go"),
	} {
		if code := applyAs(t, cl, cmd); code != codes.OK {
			t.Fatalf("%s: %v", name, code)
		}
	}
	if c, ok := n0.cl.Registry().ClaimOf("repo", "d.go"); !ok || c.SessionID != "mine" {
		t.Fatalf("the owner's claim is not held: %+v", c)
	}
	if code := applyAs(t, cl, raftstore.ReleaseCmd("mine", "", true)); code != codes.OK {
		t.Fatalf("own release: %v", code)
	}
	if _, ok := n0.cl.Registry().ClaimOf("repo", "d.go"); ok {
		t.Fatal("the owner's release did not drop its claim")
	}
}

func TestNotifyAdminsPolicyLetsANamedNodeChangeWebhooks(t *testing.T) {
	m, _ := startTrustMeshWith(t, func(c *Config) { c.Cluster.NotifyAdmins = []string{"tw1"} })
	n0 := m.nodes[0]
	n1 := m.join("tw1", m.token(false, 0, 0), false)
	cl := asMember(t, n1, n0)
	if code := applyAs(t, cl, raftstore.NotifySetCommand("wh-1", []byte(`{"url":"https://example.com/a"}`))); code != codes.OK {
		t.Fatalf("a node named by --notify-admins: %v", code)
	}
	if code := applyAs(t, cl, raftstore.NotifyRemoveCommand("wh-1")); code != codes.OK {
		t.Fatalf("remove by a node named by --notify-admins: %v", code)
	}
}

// TestSquattedSessionIsRefusedAtTheOwnersNode: a member pre-creates
// another node's session id with itself as owner. The real owner's node
// refuses its own write of that id, with a log line and a diagnostic that
// say who holds it, and goes on writing its other sessions.
func TestSquattedSessionIsRefusedAtTheOwnersNode(t *testing.T) {
	m, _ := startTrustMesh(t)
	n0 := m.nodes[0]
	n1 := m.join("tw1", m.token(false, 0, 0), false)
	n2 := m.join("tw2", m.token(false, 0, 0), false)
	// tw2, a real member, squats the id tw1's agent will use.
	if code := applyAs(t, asMember(t, n2, n0), raftstore.UpsertCommand(raftstore.Upsert{SessionID: "victim", TS: time.Now(),
		Identity: &raftstore.IdentityPatch{Node: "tw2", Agent: "claude-code"}})); code != codes.OK {
		t.Fatalf("tw2's own write: %v", code)
	}
	waitFor(t, 10*time.Second, "the squat on tw1's replica", func() bool {
		rec, ok := n1.cl.Registry().Get("victim")
		return ok && rec.Node == "tw2"
	})
	mustIngest(t, n1, ev("victim", "v1", presence.TypeSessionStart, 1, nil), ev("bystander", "b1", presence.TypeSessionStart, 1, nil))
	waitFor(t, 10*time.Second, "tw1's other session in the registry", func() bool {
		rec, ok := n0.cl.Registry().Get("bystander")
		return ok && rec.Node == "tw1"
	})
	waitFor(t, 10*time.Second, "a diagnostic on tw1", func() bool {
		ds, _ := n1.ledger.Diagnostics(10)
		for _, d := range ds {
			if d.Source == "registry" && strings.Contains(d.Error, `"victim"`) && strings.Contains(d.Error, `node "tw2"`) &&
				!strings.Contains(d.Error, "\n") {
				return true
			}
		}
		return false
	})
	if rec, _ := n0.cl.Registry().Get("victim"); rec.Node != "tw2" {
		t.Fatalf("victim moved: %+v", rec)
	}
	// The refusal is told once, not at every flush.
	n1.cl.Writer().Flush()
	n1.cl.Writer().Flush()
	ds, _ := n1.ledger.Diagnostics(50)
	count := 0
	for _, d := range ds {
		if d.Source == "registry" {
			count++
		}
	}
	if count != 1 {
		t.Fatalf("%d registry diagnostics, want 1: %+v", count, ds)
	}
}

func TestSessionQuotaRefusesTheNodesSessionOverIt(t *testing.T) {
	m, _ := startTrustMeshWith(t, func(c *Config) { c.Cluster.SessionQuota = 2 })
	n0 := m.nodes[0]
	n1 := m.join("tw1", m.token(false, 0, 0), false)
	waitFor(t, 10*time.Second, "the quota on tw1's replica", func() bool { return n1.cl.Registry().SessionQuota() == 2 })
	mustIngest(t, n1, ev("q1", "1", presence.TypeSessionStart, 1, nil), ev("q2", "2", presence.TypeSessionStart, 1, nil))
	waitFor(t, 10*time.Second, "two sessions of tw1", func() bool { return n0.cl.Registry().LiveSessions("tw1") == 2 })
	mustIngest(t, n1, ev("q3", "3", presence.TypeSessionStart, 2, nil))
	waitFor(t, 10*time.Second, "the quota diagnostic on tw1", func() bool {
		ds, _ := n1.ledger.Diagnostics(10)
		for _, d := range ds {
			if d.Source == "registry" && strings.Contains(d.Error, "q3") && strings.Contains(d.Error, "--session-quota") {
				return true
			}
		}
		return false
	})
	// Forwarded straight to the leader, the write over the quota is
	// refused there too, by every replica alike.
	code := applyAs(t, asMember(t, n1, n0), raftstore.UpsertCommand(raftstore.Upsert{SessionID: "q4", TS: time.Now(),
		Identity: &raftstore.IdentityPatch{Node: "tw1"}}))
	if code != codes.ResourceExhausted {
		t.Fatalf("the leader answered %v to a write over the quota", code)
	}
	for _, id := range []string{"q3", "q4"} {
		if _, ok := n0.cl.Registry().Get(id); ok {
			t.Fatalf("%s over the quota is in the registry", id)
		}
	}
	// Ending a session makes room.
	mustIngest(t, n1, ev("q1", "1e", presence.TypeSessionEnd, 3, nil))
	waitFor(t, 15*time.Second, "q3 written once q1 ended", func() bool {
		n1.cl.Writer().Observe(mustResolve(t, n1, "q3"))
		_, ok := n0.cl.Registry().Get("q3")
		return ok
	})
}

func mustResolve(t *testing.T, n *Node, id string) presence.State {
	t.Helper()
	st, err := n.sess.Resolve(id)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
