package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/apigrpc"
	"github.com/harn-dev/harn/node/trust"
)

// exitTrust is hook.ExitTrust: refused by mesh trust.
const exitTrust = 12

// trustedMesh starts a keyed mesh of real processes: s0 made by `harn mesh
// init` and started as the first server, n1 joined with a token. s0Env
// (KEY=VALUE) is added to s0's environment: its node's, and so its agents'.
func trustedMesh(t *testing.T, s0Env ...string) (s0, n1 *meshNode) {
	t.Helper()
	return trustedMeshN1(t, nil, s0Env...)
}

// trustedMeshN1 is trustedMesh with n1Flags added to n1's command line.
func trustedMeshN1(t *testing.T, n1Flags []string, s0Env ...string) (s0, n1 *meshNode) {
	t.Helper()
	s0 = newMeshNode(t, "s0", "--server")
	s0.base = append(s0.base, s0Env...)
	var init struct {
		JoinToken string `json:"join_token"`
	}
	mustJSON(t, s0.ok("mesh", "init", "--name", "s0", "--json"), &init)
	if !strings.HasPrefix(init.JoinToken, "harn1.") {
		t.Fatalf("mesh init printed %q", init.JoinToken)
	}
	s0.start()
	eventually(t, meshTimeout, "s0 leads", func() (bool, string) {
		r, ok, why := s0.raftState()
		return ok && r.Leader == "s0", why
	})
	rpc := net.JoinHostPort("127.0.0.1", strconv.Itoa(s0.rpc))
	n1 = newMeshNode(t, "n1", append([]string{"--join", s0.gossipAddr, "--join-rpc", rpc}, n1Flags...)...)
	n1.flags = append(n1.flags, "--join-token", init.JoinToken)
	n1.start()
	n1.flags = n1.flags[:len(n1.flags)-2] // a restart needs no token
	waitAllAlive(t, s0, n1)
	return s0, n1
}

// TestSecurityPlaintextClientsRefusedByKeyedMesh is the security test from
// outside the mesh: a plain gRPC client and a raw raft client, on every
// node's ports, must be refused. It must keep failing as long as a
// plaintext client can reach anything.
func TestSecurityPlaintextClientsRefusedByKeyedMesh(t *testing.T) {
	s0, n1 := trustedMesh(t)
	for _, m := range []*meshNode{s0, n1} {
		rpc := net.JoinHostPort("127.0.0.1", strconv.Itoa(m.rpc))
		for name, creds := range map[string]credentials.TransportCredentials{
			"plaintext":                 insecure.NewCredentials(),
			"tls without a certificate": credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS13, InsecureSkipVerify: true}),
		} {
			cc, err := grpc.NewClient(rpc, grpc.WithTransportCredentials(creds))
			if err != nil {
				t.Fatal(err)
			}
			cl := apigrpc.NewClusterClient(cc)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if res, err := cl.ConsistentList(ctx, &api.ConsistentListRequest{}); err == nil {
				t.Errorf("%s: %s ConsistentList answered %d records", m.name, name, len(res.Records))
			}
			if _, err := cl.Presence(ctx, &api.PresenceRequest{}); err == nil {
				t.Errorf("%s: %s Presence answered", m.name, name)
			}
			if _, err := cl.Session(ctx, &api.SessionRequest{Id: "x"}); err == nil {
				t.Errorf("%s: %s Session answered", m.name, name)
			}
			forged := append([]byte{1}, []byte(`{"op":"upsert","upserts":[{"session_id":"forged","ts":"2026-01-01T00:00:00Z","identity":{"node":"s0"}}]}`)...)
			if _, err := cl.Apply(ctx, &api.ApplyRequest{Command: forged}); err == nil {
				t.Errorf("%s: %s Apply accepted", m.name, name)
			}
			cancel()
			cc.Close()
		}
		if err := rawRaftAppend(t, m.raftStr); err == nil {
			t.Errorf("%s: a raw raft client's AppendEntries was read", m.name)
		}
	}
	// Nothing was written, and both nodes still run.
	for _, m := range []*meshNode{s0, n1} {
		if m.proc.exited() {
			t.Fatalf("%s exited", m.name)
		}
		rs, ok, why := m.roster(false)
		if !ok {
			t.Fatal(why)
		}
		for _, r := range rs {
			if r.SessionID == "forged" {
				t.Fatalf("%s holds the forged session", m.name)
			}
		}
	}
}

// rawRaftAppend sends one AppendEntries over plain TCP.
func rawRaftAppend(t *testing.T, target string) error {
	t.Helper()
	tr, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 3*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	req := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("evil"), Addr: []byte("evil")},
		Term: 1 << 40, LeaderCommitIndex: 1,
		Entries: []*raft.Log{{Index: 1 << 20, Term: 1 << 40, Type: raft.LogCommand, Data: []byte{1, '{', '}'}}}}
	var resp raft.AppendEntriesResponse
	return tr.AppendEntries("s0", raft.ServerAddress(target), req, &resp)
}

func TestJoinedNodeRestartsWithoutToken(t *testing.T) {
	s0, n1 := trustedMesh(t)
	// Presence crosses the mesh over mutual TLS and encrypted gossip.
	n1.stop()
	n1.start()
	eventually(t, meshTimeout, "n1 alive again on s0", func() (bool, string) {
		ms, ok, why := s0.members()
		if !ok {
			return false, why
		}
		for _, x := range ms {
			if x.Name == "n1" && x.Status == "alive" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%v", ms)
	})
}

func TestWrongJoinTokenExitsWithTrustCode(t *testing.T) {
	s0, _ := trustedMesh(t)
	var tok struct {
		JoinToken string `json:"join_token"`
	}
	mustJSON(t, s0.ok("token", "create", "--json", "--uses", "1"), &tok)
	parsed, err := trust.ParseToken(tok.JoinToken)
	if err != nil {
		t.Fatal(err)
	}
	parsed.Secret = strings.Repeat("a", len(parsed.Secret)) // well formed, wrong
	bad := newMeshNode(t, "bad", "--join", s0.gossipAddr, "--join-rpc", net.JoinHostPort("127.0.0.1", strconv.Itoa(s0.rpc)),
		"--join-token", parsed.String())
	r := bad.harn("", append([]string{"node", "--data-dir", bad.dataDir, "--socket", bad.socket}, bad.nodeArgs()...)...)
	if r.code != exitTrust || !strings.Contains(r.stderr, "wrong join token secret") {
		t.Fatalf("want exit %d naming the wrong secret, got %v", exitTrust, r)
	}
	var list []struct {
		ID   string `json:"id"`
		Used int    `json:"used"`
	}
	mustJSON(t, s0.ok("token", "list", "--json"), &list)
	found := false
	for _, x := range list {
		if x.ID != parsed.ID {
			continue // the mesh's own join token, used by n1
		}
		found = true
		if x.Used != 0 {
			t.Fatalf("a refused join used the token: %+v", list)
		}
	}
	if !found {
		t.Fatalf("token %s is not listed: %+v", parsed.ID, list)
	}
}

func TestMeshRemoveRevokesThroughTheCLI(t *testing.T) {
	s0, n1 := trustedMesh(t)
	var ring struct {
		Keys     []string `json:"keys"`
		NodeKeys []string `json:"node_keys"`
	}
	eventually(t, meshTimeout, "the keyring in the registry, seen from n1", func() (bool, string) {
		ok, why := n1.try(&ring, "keyring", "list", "--json")
		return ok && len(ring.Keys) == 1 && len(ring.NodeKeys) == 1 && ring.Keys[0] == ring.NodeKeys[0], why
	})
	var created struct {
		JoinToken string `json:"join_token"`
	}
	// A node is not a server: it cannot make tokens.
	if r := n1.harn("", "token", "create", "--json"); r.code != exitTrust {
		t.Fatalf("token create on a node: %v", r)
	}
	mustJSON(t, s0.ok("token", "create", "--json"), &created)
	eventually(t, meshTimeout, "n1 reads through the leader", func() (bool, string) {
		r := n1.harn("", "agents", "list", "--consistent", "--json")
		return r.code == 0, r.String()
	})
	eventually(t, meshTimeout, "n1's certificate recorded", func() (bool, string) {
		r := s0.harn("", "mesh", "remove", "n1")
		return r.code == 0 && strings.Contains(r.stdout, "revoked 1 certificate(s) of n1"), r.String()
	})
	// n1 is refused from now on: its registry reads through the leader fail.
	eventually(t, meshTimeout, "n1 refused by s0", func() (bool, string) {
		r := n1.harn("", "agents", "list", "--consistent", "--json")
		return r.code != 0, r.String()
	})
}

// inRaft reports whether m's registry lists id in its raft configuration.
func inRaft(m *meshNode, id string) (bool, string) {
	r, ok, why := m.raftState()
	if !ok {
		return false, why
	}
	for _, s := range r.Servers {
		if s.ID == id {
			return true, fmt.Sprintf("%+v", r.Servers)
		}
	}
	return false, fmt.Sprintf("%+v", r.Servers)
}

// TestMeshRemoveTakesTheNodeOutOfRaft: `harn mesh remove n1` revokes n1
// (a read replica, a raft member) and takes it out of the raft
// configuration, and the leader does not add it back although n1, which
// still holds the gossip key, stays alive in gossip. The barrier is a
// third node's join: the leader's reconciler adds the replica n2 in a
// pass that also sees n1, so n1 must still be out once n2 is in.
func TestMeshRemoveTakesTheNodeOutOfRaft(t *testing.T) {
	s0, _ := trustedMeshN1(t, []string{"--replica"})
	eventually(t, meshTimeout, "n1 in the raft configuration", func() (bool, string) { return inRaft(s0, "n1") })
	eventually(t, meshTimeout, "n1's certificate recorded and revoked", func() (bool, string) {
		r := s0.harn("", "mesh", "remove", "n1")
		return r.code == 0 && strings.Contains(r.stdout, "revoked 1 certificate(s) of n1") &&
			strings.Contains(r.stdout, "removed n1 from the registry"), r.String()
	})
	eventually(t, meshTimeout, "n1 out of the raft configuration", func() (bool, string) {
		in, why := inRaft(s0, "n1")
		return !in, why
	})
	var created struct {
		JoinToken string `json:"join_token"`
	}
	mustJSON(t, s0.ok("token", "create", "--json"), &created)
	n2 := newMeshNode(t, "n2", "--join", s0.gossipAddr, "--join-rpc", net.JoinHostPort("127.0.0.1", strconv.Itoa(s0.rpc)),
		"--join-token", created.JoinToken, "--replica")
	n2.start()
	eventually(t, meshTimeout, "n2 in the raft configuration", func() (bool, string) { return inRaft(s0, "n2") })
	if in, why := inRaft(s0, "n1"); in {
		t.Fatalf("the leader added the removed n1 back: %s", why)
	}
	ms, ok, why := s0.members()
	if !ok {
		t.Fatal(why)
	}
	if mb, found := memberOf(ms, "n1"); !found || mb.Status != "alive" {
		t.Fatalf("n1 is %+v in gossip; the barrier needs it alive", mb)
	}
}
