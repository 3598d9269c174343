package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/apigrpc"
	"github.com/harn-dev/harn/node/cluster"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/raftstore"
)

// memberClient dials target's cluster gRPC with member's own certificate
// and key, read from its data dir: a real member of the mesh acting
// outside its node, as an attacker holding that laptop would.
func memberClient(t *testing.T, member, target *meshNode) apigrpc.ClusterClient {
	t.Helper()
	cert, err := trust.LoadNodeCert(filepath.Join(member.dataDir, "tls"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, InsecureSkipVerify: true, Certificates: []tls.Certificate{cert}}
	cc, err := grpc.NewClient(net.JoinHostPort("127.0.0.1", strconv.Itoa(target.rpc)), grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return apigrpc.NewClusterClient(cc)
}

// forward sends cmd to the leader over cl and returns the answer's code.
func forward(t *testing.T, cl apigrpc.ClusterClient, cmd raftstore.Command) codes.Code {
	t.Helper()
	b, err := raftstore.EncodeCommand(cmd)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = cl.Apply(ctx, &api.ApplyRequest{Command: b})
	return status.Code(err)
}

// registryRecords reads the leader's registry (linearizable) over cl.
func registryRecords(t *testing.T, cl apigrpc.ClusterClient) map[string]raftstore.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cl.ConsistentList(ctx, &api.ConsistentListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]raftstore.Record{}
	for _, r := range res.Records {
		out[r.SessionId] = cluster.RecordFromAPI(r)
	}
	return out
}

// TestMemberCannotReleaseOrClaimInAnotherSessionsName: n1's certificate
// releases the claims of s0's session, and claims in its name, straight at
// the leader: both are refused, and n1's own agent stays denied the file.
func TestMemberCannotReleaseOrClaimInAnotherSessionsName(t *testing.T) {
	s0, n1 := trustedMesh(t)
	cloneS, cloneN := filepath.Join(s0.root, "r"), filepath.Join(n1.root, "r")
	gitClone(t, cloneS, "git@example.com:team/r.git")
	gitClone(t, cloneN, "https://example.com/team/r")
	startClaudeSession(s0, "sess-s", cloneS)
	if r := s0.hook("claude-code", claudePreWrite("sess-s", cloneS, filepath.Join(cloneS, "pkg", "x.go"))); strings.Contains(r.stdout, "deny") {
		t.Fatalf("s0's first write was denied: %v", r)
	}
	startClaudeSession(n1, "sess-n", cloneN)
	denied := func() (bool, string) {
		r := n1.hook("claude-code", claudePreWrite("sess-n", cloneN, filepath.Join(cloneN, "pkg", "x.go")))
		return strings.Contains(r.stdout, `"permissionDecision":"deny"`), r.stdout
	}
	eventually(t, meshTimeout, "n1's agent denied pkg/x.go", denied)

	cl := memberClient(t, n1, s0)
	const repo = "example.com/team/r"
	now := time.Now()
	for name, cmd := range map[string]raftstore.Command{
		"release of s0's session's claims": raftstore.ReleaseCmd("sess-s", "", true),
		"release of s0's session's path":   raftstore.ReleaseCmd("sess-s", repo, false, "pkg/x.go"),
		"claim in s0's session's name":     raftstore.ClaimCmd("sess-s", "n1", repo, now, "pkg/y.go"),
		"claim in s0's session's and name": raftstore.ClaimCmd("sess-s", "s0", repo, now, "pkg/y.go"),
		"claim for a new session as s0":    raftstore.ClaimCmd("sess-new", "s0", repo, now, "pkg/z.go"),
	} {
		if code := forward(t, cl, cmd); code != codes.PermissionDenied {
			t.Errorf("%s: the leader answered %v, want PermissionDenied", name, code)
		}
	}
	// The operator's release-claim on n1 for s0's session is refused too.
	if r := n1.harn("", "agents", "release-claim", "--session", "sess-s", "--all"); r.code != exitTrust ||
		!strings.Contains(r.stderr, `belongs to node "s0"`) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("release-claim of another node's session on a plain node: want exit %d, one line naming the owner: %v", exitTrust, r)
	}
	// The other agent's next write stays denied; a forged claim holds
	// nothing: n1's agent may write pkg/y.go.
	if ok, out := denied(); !ok {
		t.Fatalf("after the refused release, n1's agent was allowed pkg/x.go: %s", out)
	}
	if r := n1.hook("claude-code", claudePreWrite("sess-n", cloneN, filepath.Join(cloneN, "pkg", "y.go"))); strings.Contains(r.stdout, "deny") {
		t.Fatalf("a refused claim in s0's session's name holds pkg/y.go: %v", r)
	}
	// The owner's own release works: s0 releases, n1's agent may write.
	s0.ok("agents", "release-claim", "--session", "sess-s", "--all")
	eventually(t, meshTimeout, "n1's agent allowed pkg/x.go after the owner's release", func() (bool, string) {
		ok, out := denied()
		return !ok, out
	})
}

// TestPlainNodeCannotAddOrRemoveAWebhook: `harn notify add` on a plain
// node, and its certificate's forged notify_set and notify_remove at the
// leader, are refused; a server's add works.
func TestPlainNodeCannotAddOrRemoveAWebhook(t *testing.T) {
	s0, n1 := trustedMesh(t)
	r := n1.harn("", "notify", "add", "webhook", "https://hooks.example.com/x", "--format", "json")
	if r.code != exitTrust || !strings.Contains(r.stderr, "--notify-admins") || strings.Contains(r.stderr, "no leader") {
		t.Fatalf("notify add on a plain node: want exit %d naming --notify-admins: %v", exitTrust, r)
	}
	s0.ok("notify", "add", "webhook", "https://hooks.example.com/ok", "--format", "json")
	var list struct {
		Webhooks []struct {
			ID string `json:"id"`
		} `json:"webhooks"`
	}
	mustJSON(t, s0.ok("notify", "list", "--json"), &list)
	if len(list.Webhooks) != 1 {
		t.Fatalf("webhooks after a server's add: %s", s0.ok("notify", "list", "--json"))
	}
	id := list.Webhooks[0].ID
	cl := memberClient(t, n1, s0)
	if code := forward(t, cl, raftstore.NotifyRemoveCommand(id)); code != codes.PermissionDenied {
		t.Fatalf("n1's notify_remove: %v", code)
	}
	if code := forward(t, cl, raftstore.NotifySetCommand("wh-evil", []byte(`{"url":"http://127.0.0.1:9/x","format":"json"}`))); code != codes.PermissionDenied {
		t.Fatalf("n1's notify_set: %v", code)
	}
	mustJSON(t, s0.ok("notify", "list", "--json"), &list)
	if len(list.Webhooks) != 1 || list.Webhooks[0].ID != id {
		t.Fatalf("the webhooks changed: %+v", list)
	}
}

// joinNode joins a plain node to s0 with a fresh token.
func joinNode(t *testing.T, s0 *meshNode, name string) *meshNode {
	t.Helper()
	var tok struct {
		JoinToken string `json:"join_token"`
	}
	mustJSON(t, s0.ok("token", "create", "--json"), &tok)
	n := newMeshNode(t, name, "--join", s0.gossipAddr, "--join-rpc", net.JoinHostPort("127.0.0.1", strconv.Itoa(s0.rpc)))
	n.flags = append(n.flags, "--join-token", tok.JoinToken)
	n.start()
	n.flags = n.flags[:len(n.flags)-2]
	return n
}

// TestSquattedSessionIsRefusedAtItsOwnersNode: n2, a member, pre-creates
// the session id n1's agent then uses, with itself as owner. n1 refuses
// its own write of that id with a diagnostic naming n2 (`harn node
// errors`), and its other sessions still reach the registry.
func TestSquattedSessionIsRefusedAtItsOwnersNode(t *testing.T) {
	s0, n1 := trustedMesh(t)
	n2 := joinNode(t, s0, "n2")
	attacker := memberClient(t, n2, s0)
	if code := forward(t, attacker, raftstore.UpsertCommand(raftstore.Upsert{SessionID: "sess-v", TS: time.Now(),
		Identity: &raftstore.IdentityPatch{Node: "n2", Agent: "claude-code"}})); code != codes.OK {
		t.Fatalf("n2's write of its own (squatted) session: %v", code)
	}
	eventually(t, meshTimeout, "the squat in the registry", func() (bool, string) {
		recs := registryRecords(t, attacker)
		return recs["sess-v"].Node == "n2", fmt.Sprint(recs)
	})
	startClaudeSession(n1, "sess-v", n1.root)
	startClaudeSession(n1, "sess-ok", n1.root)
	eventually(t, meshTimeout, "n1 says why sess-v is not in the registry", func() (bool, string) {
		out := n1.ok("node", "errors")
		return strings.Contains(out, "sess-v") && strings.Contains(out, `node "n2"`) && strings.Contains(out, "unique per owner"), out
	})
	eventually(t, meshTimeout, "n1's other session in the registry", func() (bool, string) {
		recs := registryRecords(t, memberClient(t, n1, s0))
		return recs["sess-ok"].Node == "n1" && recs["sess-v"].Node == "n2", fmt.Sprint(recs)
	})
}

// TestSessionQuotaRefusesTheSessionOverIt: with --session-quota 2 on the
// server, n1's third live session is refused with an error naming the
// quota and the flag, and a forged third write at the leader too.
func TestSessionQuotaRefusesTheSessionOverIt(t *testing.T) {
	s0, n1 := trustedMesh(t, "HARN_SESSION_QUOTA=2")
	for _, id := range []string{"sess-q1", "sess-q2"} {
		startClaudeSession(n1, id, n1.root)
	}
	cl := memberClient(t, n1, s0)
	eventually(t, meshTimeout, "n1's two sessions in the registry", func() (bool, string) {
		recs := registryRecords(t, cl)
		return recs["sess-q1"].Node == "n1" && recs["sess-q2"].Node == "n1", fmt.Sprint(recs)
	})
	startClaudeSession(n1, "sess-q3", n1.root)
	eventually(t, meshTimeout, "n1 says sess-q3 is over the quota", func() (bool, string) {
		out := n1.ok("node", "errors")
		return strings.Contains(out, "sess-q3") && strings.Contains(out, "session quota") && strings.Contains(out, "--session-quota"), out
	})
	if code := forward(t, cl, raftstore.UpsertCommand(raftstore.Upsert{SessionID: "sess-q4", TS: time.Now(),
		Identity: &raftstore.IdentityPatch{Node: "n1"}})); code != codes.ResourceExhausted {
		t.Fatalf("the leader answered %v to a write over the quota", code)
	}
	recs := registryRecords(t, cl)
	for _, id := range []string{"sess-q3", "sess-q4"} {
		if _, ok := recs[id]; ok {
			t.Fatalf("%s over the quota is in the registry", id)
		}
	}
}
