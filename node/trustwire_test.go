package node

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/apigrpc"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/meshtrust"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/raftstore"
	"github.com/harn-dev/harn/util/clock"
)

// trustMesh is an in-process mesh with a CA on 127.0.0.1: node 0 is the
// first server (harn mesh init), the others join with tokens.
type trustMesh struct {
	t      testing.TB
	base   string
	nodes  []*Node
	adjust func(*Config)
}

func trustConfig(t testing.TB, base, name string) Config {
	t.Helper()
	sockDir, err := os.MkdirTemp("", "tw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	cfg := DefaultConfig()
	cfg.DataDir = filepath.Join(base, name)
	cfg.Socket = filepath.Join(sockDir, "s.sock")
	cfg.Name = name
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("HARN_TEST_LOG") != "" {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil)).With("test", name)
	}
	cc := &cfg.Cluster
	cc.Enabled, cc.Bind = true, "127.0.0.1"
	cc.GossipPort, cc.RaftPort, cc.RPCPort, cc.HTTPPort = 0, 0, 0, 0
	// LAN raft timers: the fast profile's 50 ms elections do not survive
	// TLS handshakes under -race on a loaded machine.
	cc.MeshProfile, cc.RaftProfile = "local", "lan"
	cc.PresenceRefresh, cc.ActivityFlush = 100*time.Millisecond, 100*time.Millisecond
	cc.TrustSync = 50 * time.Millisecond
	return cfg
}

// startTrustMesh runs `mesh init` for node 0, opens it as the first
// server, and returns the mesh and the init token.
func startTrustMesh(t testing.TB) (*trustMesh, string) {
	return startTrustMeshWith(t, nil)
}

// startTrustMeshWith is startTrustMesh with every config passed through
// adjust (nil: none), node 0's and the joiners'.
func startTrustMeshWith(t testing.TB, adjust func(*Config)) (*trustMesh, string) {
	t.Helper()
	m := &trustMesh{t: t, base: t.TempDir(), adjust: adjust}
	t.Cleanup(m.close)
	cfg := trustConfig(t, m.base, "tw0")
	if adjust != nil {
		adjust(&cfg)
	}
	init, err := InitMesh(cfg.DataDir, "tw0", wire.TokenCreateArgs{}, clock.Real{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Cluster.Server, cfg.Cluster.BootstrapExpect = true, 1
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Open(); err != nil {
		t.Fatal(err)
	}
	m.nodes = append(m.nodes, n)
	mesh.WaitFor(t, 15*time.Second, "a leader", func() bool { return n.cl.Registry().IsLeader() })
	return m, init.Token.Token
}

func (m *trustMesh) close() {
	for _, n := range m.nodes {
		if n != nil {
			n.Close()
		}
	}
}

// token makes a join token on node 0.
func (m *trustMesh) token(server bool, ttl time.Duration, uses int) string {
	m.t.Helper()
	b, _ := json.Marshal(wire.TokenCreateArgs{Server: server, TTL: ttl, Uses: uses})
	out, err := m.nodes[0].trust.MeshAdmin(context.Background(), wire.AdminTokenCreate, b)
	if err != nil {
		m.t.Fatal(err)
	}
	return out.(wire.TokenCreated).Token
}

// joinCfg is the config of a node that joins node 0 with token.
func (m *trustMesh) joinCfg(name, token string, server bool) Config {
	cfg := trustConfig(m.t, m.base, name)
	cc := &cfg.Cluster
	cc.Join, cc.JoinRPC = []string{m.nodes[0].MeshAddr()}, []string{m.nodes[0].RPCAddr()}
	cc.JoinToken, cc.Server = token, server
	if m.adjust != nil {
		m.adjust(&cfg)
	}
	return cfg
}

// join opens a node that joins with token.
func (m *trustMesh) join(name, token string, server bool) *Node {
	m.t.Helper()
	n, err := New(m.joinCfg(name, token, server))
	if err != nil {
		m.t.Fatal(err)
	}
	if err := n.Open(); err != nil {
		m.t.Fatal(err)
	}
	m.nodes = append(m.nodes, n)
	return n
}

// dialCluster dials a node's cluster gRPC with creds.
func dialCluster(t *testing.T, addr string, creds credentials.TransportCredentials) apigrpc.ClusterClient {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return apigrpc.NewClusterClient(cc)
}

// asMember dials node n's cluster gRPC with member's certificate.
func asMember(t *testing.T, member, n *Node) apigrpc.ClusterClient {
	return dialCluster(t, n.RPCAddr(), credentials.NewTLS(trust.ClientTLS(member.cl.Parts().Trust.Holder())))
}

func forgedUpsert(t *testing.T, session, owner string) []byte {
	t.Helper()
	b, err := raftstore.EncodeCommand(raftstore.UpsertCommand(raftstore.Upsert{SessionID: session, TS: time.Now(),
		Identity: &raftstore.IdentityPatch{Node: owner, Agent: "claude-code"}}))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// foreignCert is a certificate with a valid-looking identity from another CA.
func foreignCert(t *testing.T, name string, role trust.Role, now time.Time, ttl time.Duration) tls.Certificate {
	t.Helper()
	ca, err := trust.NewCA(now.Add(-time.Hour), trust.DefaultCATTL)
	if err != nil {
		t.Fatal(err)
	}
	return issue(t, ca, name, role, now, ttl)
}

func issue(t *testing.T, ca *trust.CA, name string, role trust.Role, now time.Time, ttl time.Duration) tls.Certificate {
	t.Helper()
	key, err := trust.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.Issue(key.Public(), name, role, ttl, now)
	if err != nil {
		t.Fatal(err)
	}
	return trust.TLSCertificate(cert, key)
}

// rawTLS is a client config that presents cert (or none) and trusts
// anything: what an attacker would use.
func rawTLS(cert *tls.Certificate) *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS13, InsecureSkipVerify: true}
	if cert != nil {
		c.Certificates = []tls.Certificate{*cert}
	}
	return c
}

// raftAppend sends one forged AppendEntries to a raft address over a
// stream with tlsCfg (nil: plain TCP).
func raftAppend(t *testing.T, target string, tlsCfg *tls.Config, session string) error {
	t.Helper()
	sl, err := raftstore.NewStreamLayer("127.0.0.1:0", "", tlsCfg)
	if err != nil {
		t.Fatal(err)
	}
	tr := raft.NewNetworkTransport(sl, 1, 2*time.Second, io.Discard)
	defer tr.Close()
	data, _ := raftstore.EncodeCommand(raftstore.UpsertCommand(raftstore.Upsert{SessionID: session, TS: time.Now(),
		Identity: &raftstore.IdentityPatch{Node: "evil"}}))
	req := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("evil"), Addr: []byte("evil")},
		Term: 1 << 40, PrevLogEntry: 0, PrevLogTerm: 0, LeaderCommitIndex: 1 << 30,
		Entries: []*raft.Log{{Index: 1 << 20, Term: 1 << 40, Type: raft.LogCommand, Data: data}}}
	var resp raft.AppendEntriesResponse
	// A transport-level answer, success or not, means raft read the
	// request: only a refusal before that counts.
	return tr.AppendEntries("tw0", raft.ServerAddress(target), req, &resp)
}

func TestPlaintextAndForeignClientsRefusedAtTheHandshake(t *testing.T) {
	m, _ := startTrustMesh(t)
	n0 := m.nodes[0]
	now := time.Now()
	self := foreignCert(t, "tw0", trust.RoleServer, now, time.Hour) // a look-alike of the leader
	for name, creds := range map[string]credentials.TransportCredentials{
		"plaintext":   insecure.NewCredentials(),
		"no cert":     credentials.NewTLS(rawTLS(nil)),
		"another CA":  credentials.NewTLS(rawTLS(&self)),
		"self-signed": credentials.NewTLS(rawTLS(selfSigned(t, "tw0"))),
	} {
		cl := dialCluster(t, n0.RPCAddr(), creds)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, err := cl.ConsistentList(ctx, &api.ConsistentListRequest{})
		if err == nil {
			t.Errorf("%s: ConsistentList answered", name)
		}
		_, err = cl.Apply(ctx, &api.ApplyRequest{Command: forgedUpsert(t, "forged-"+name, "tw0")})
		cancel()
		if err == nil {
			t.Errorf("%s: Apply accepted", name)
		}
	}
	for name, cfg := range map[string]*tls.Config{
		"plaintext": nil, "no cert": rawTLS(nil), "another CA": rawTLS(&self), "self-signed": rawTLS(selfSigned(t, "tw0")),
	} {
		if err := raftAppend(t, n0.RaftAddr(), cfg, "raft-"+name); err == nil {
			t.Errorf("%s: raft AppendEntries accepted", name)
		}
	}
	for _, rec := range n0.cl.Registry().List() {
		t.Errorf("a refused client wrote %s", rec.SessionID)
	}
}

// selfSigned is a certificate that claims a mesh identity but signs itself.
func selfSigned(t *testing.T, name string) *tls.Certificate {
	t.Helper()
	ca, err := trust.NewCA(time.Now().Add(-time.Hour), time.Hour*24)
	if err != nil {
		t.Fatal(err)
	}
	// A CA certificate is its own issuer: present it as a leaf.
	c := trust.TLSCertificate(ca.Cert, ca.Key)
	_ = name
	return &c
}

func TestExpiredCertificateIsRefused(t *testing.T) {
	m, _ := startTrustMesh(t)
	n0 := m.nodes[0]
	past := time.Now().Add(-48 * time.Hour)
	old := issue(t, n0.cl.Parts().Trust.Authority().CA(), "tw9", trust.RoleServer, past, time.Hour)
	cl := dialCluster(t, n0.RPCAddr(), credentials.NewTLS(rawTLS(&old)))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := cl.ConsistentList(ctx, &api.ConsistentListRequest{}); err == nil {
		t.Fatal("an expired certificate read the registry")
	}
	if err := raftAppend(t, n0.RaftAddr(), rawTLS(&old), "expired"); err == nil {
		t.Fatal("an expired certificate appended to raft")
	}
}

func TestNodeCertificateCannotWriteAnotherNodesSession(t *testing.T) {
	m, _ := startTrustMesh(t)
	n0 := m.nodes[0]
	n1 := m.join("tw1", m.token(false, 0, 0), false)
	cl := asMember(t, n1, n0)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := cl.Apply(ctx, &api.ApplyRequest{Command: forgedUpsert(t, "theirs", "tw0")}); err == nil {
		t.Fatal("tw1 wrote a session of tw0")
	}
	if _, err := cl.Apply(ctx, &api.ApplyRequest{Command: forgedUpsert(t, "mine", "tw1")}); err != nil {
		t.Fatalf("tw1 could not write its own session: %v", err)
	}
	// An existing session of tw0 cannot be ended or moved by tw1 either.
	if _, err := n0.cl.Apply(ctx, raftstore.UpsertCommand(raftstore.Upsert{SessionID: "s0", TS: time.Now(),
		Identity: &raftstore.IdentityPatch{Node: "tw0"}})); err != nil {
		t.Fatal(err)
	}
	end, _ := raftstore.EncodeCommand(raftstore.UpsertCommand(raftstore.Upsert{SessionID: "s0", TS: time.Now().Add(time.Second),
		End: &raftstore.EndPatch{Ended: true, Reason: "forged"}}))
	if _, err := cl.Apply(ctx, &api.ApplyRequest{Command: end}); err == nil {
		t.Fatal("tw1 ended a session of tw0")
	}
	if _, err := cl.Apply(ctx, &api.ApplyRequest{Command: forgedUpsert(t, "s0", "tw1")}); err == nil {
		t.Fatal("tw1 took over a session of tw0")
	}
	kv, _ := raftstore.EncodeCommand(raftstore.KVCommand(raftstore.KVOp{Key: meshtrust.KVRevokedPrefix + "00", Value: []byte("{}")}))
	if _, err := cl.Apply(ctx, &api.ApplyRequest{Command: kv}); err == nil {
		t.Fatal("a node (not a server) wrote a trust record")
	}
	if rec, _ := n0.cl.Registry().Get("s0"); rec.Ended || rec.Node != "tw0" {
		t.Fatalf("s0 changed: %+v", rec)
	}
	if _, ok := n0.cl.Registry().Get("theirs"); ok {
		t.Fatal("the refused write is in the registry")
	}
}

func TestJoinRefusesWrongTokenAndWrongPin(t *testing.T) {
	m, _ := startTrustMesh(t)
	n0 := m.nodes[0]
	good, err := trust.ParseToken(m.token(false, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	wrong := good
	wrong.Secret = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	if _, err := trust.Join(ctx, n0.RPCAddr(), wrong, "tw5"); !errors.Is(err, trust.ErrTokenSecret) {
		t.Fatalf("wrong secret: %v", err)
	}
	other, err := trust.NewCA(time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pinned := good
	pinned.CA = other.Fingerprint()
	if _, err := trust.Join(ctx, n0.RPCAddr(), pinned, "tw5"); !errors.Is(err, trust.ErrPinMismatch) {
		t.Fatalf("wrong pin: %v", err)
	}
	// The good token still works: the refusals cost it nothing.
	if _, err := trust.Join(ctx, n0.RPCAddr(), good, "tw5"); err != nil {
		t.Fatal(err)
	}
}

func TestTokenPastItsUsesOrTTLIsRefused(t *testing.T) {
	m, _ := startTrustMesh(t)
	n0 := m.nodes[0]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	once, _ := trust.ParseToken(m.token(false, 0, 1))
	if _, err := trust.Join(ctx, n0.RPCAddr(), once, "tw6"); err != nil {
		t.Fatal(err)
	}
	if _, err := trust.Join(ctx, n0.RPCAddr(), once, "tw7"); !errors.Is(err, trust.ErrTokenUsedUp) {
		t.Fatalf("second use: %v", err)
	}
	short, _ := trust.ParseToken(m.token(false, 100*time.Millisecond, 0))
	end := time.Now().Add(100 * time.Millisecond)
	waitFor(t, 5*time.Second, "the token's end", func() bool { return time.Now().After(end) })
	if _, err := trust.Join(ctx, n0.RPCAddr(), short, "tw8"); !errors.Is(err, trust.ErrTokenExpired) {
		t.Fatalf("expired token: %v", err)
	}
}

func TestRemovedNodeIsRefusedAndCannotRejoinWithItsCertificate(t *testing.T) {
	m, initTok := startTrustMesh(t)
	n0 := m.nodes[0]
	n1 := m.join("tw1", initTok, false) // the init token, from the data dir or the registry
	holder := n1.cl.Parts().Trust.Holder()
	cl := asMember(t, n1, n0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	waitFor(t, 10*time.Second, "tw1's certificate recorded", func() bool {
		id, _ := holder.Identity()
		_, ok := n0.cl.Registry().KVGet(meshtrust.KVIssuedPrefix + id.Serial)
		return ok
	})
	if _, err := cl.ConsistentList(ctx, &api.ConsistentListRequest{}); err != nil {
		t.Fatalf("member read: %v", err)
	}
	args, _ := json.Marshal("tw1")
	out, err := n0.trust.MeshAdmin(ctx, wire.AdminRevokeNode, args)
	if err != nil {
		t.Fatal(err)
	}
	if rv := out.(wire.Revoked); len(rv.Serials) != 1 {
		t.Fatalf("revoked %v", rv)
	}
	id, _ := holder.Identity()
	waitFor(t, 5*time.Second, "the revocation applied", func() bool { return n0.cl.Parts().Trust.Revocations().IsRevoked(id.Serial) })
	// The open connection is refused per call; a new one at the handshake.
	if _, err := cl.ConsistentList(ctx, &api.ConsistentListRequest{}); err == nil {
		t.Fatal("a revoked certificate read over its open connection")
	}
	if _, err := asMember(t, n1, n0).ConsistentList(ctx, &api.ConsistentListRequest{}); err == nil {
		t.Fatal("a revoked certificate read over a new connection")
	}
	n1.Close()
	m.nodes[1] = nil
	// Restarted with its old certificate, it cannot renew or reach anything.
	if _, err := trust.RenewAt(ctx, n0.RPCAddr(), holder); err == nil {
		t.Fatal("a revoked certificate was renewed")
	}
	cert := *holder.Cert()
	if err := raftAppend(t, n0.RaftAddr(), rawTLS(&cert), "revoked"); err == nil {
		t.Fatal("a revoked certificate appended to raft")
	}
}

func TestInsecureMeshRunsPlaintextOnAnyAddress(t *testing.T) {
	cfg := trustConfig(t, t.TempDir(), "tw0")
	cfg.Cluster.Bind = "0.0.0.0"
	cfg.Cluster.InsecureMesh = true
	cfg.Cluster.Advertise = "127.0.0.1"
	cfg.Cluster.GossipPort, cfg.Cluster.RaftPort, cfg.Cluster.RPCPort = freePort(t), freePort(t), freePort(t)
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Open(); err != nil {
		t.Fatalf("--insecure-mesh: %v", err)
	}
	defer n.Close()
	if n.cl.Parts().Trust != nil {
		t.Fatal("--insecure-mesh: the node made a CA")
	}
}

func TestRemoteControlPolicy(t *testing.T) {
	m, _ := startTrustMesh(t)
	n0 := m.nodes[0]
	n1 := m.join("tw1", m.token(false, 0, 0), false)
	for _, tc := range []struct {
		policy string
		allow  bool
	}{{"", false}, {"off", false}, {"servers", false}, {"tw1", true}, {"servers,tw1", true}, {"tw2,tw3", false}} {
		n0.cfg.Cluster.RemoteControl = tc.policy
		// Drive the policy through a real TLS call: the handler's context
		// is what a remote action gets.
		got := callWithPolicy(t, n0, n1)
		if (got == nil) != tc.allow {
			t.Errorf("policy %s: err %v", tc.policy, got)
		}
		if got != nil && !errors.Is(got, trust.ErrRemoteControl) {
			t.Errorf("policy %s: %v does not wrap ErrRemoteControl", tc.policy, got)
		}
	}
	// The role servers admits a caller holding a server-role certificate.
	n1.cfg.Cluster.RemoteControl = "servers"
	if err := callWithPolicy(t, n1, n0); err != nil {
		t.Errorf("policy servers refused the server %s: %v", n0.cfg.Name, err)
	}
}

// callWithPolicy makes one mutual-TLS call from caller to target and runs
// the gate's AuthorizeControl in the handler.
func callWithPolicy(t *testing.T, target, caller *Node) error {
	t.Helper()
	ch := make(chan error, 1)
	lis, srv := authServer(t, target, func(ctx context.Context) {
		_, err := target.gate.AuthorizeControl(ctx)
		ch <- err
	})
	defer srv.Stop()
	cl := apigrpc.NewClusterClient(mustDial(t, lis, credentials.NewTLS(trust.ClientTLS(caller.cl.Parts().Trust.Holder()))))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := cl.Presence(ctx, &api.PresenceRequest{}); err != nil {
		return fmt.Errorf("call: %w", err)
	}
	return <-ch
}

// presenceHook is a Cluster server whose Presence runs fn with its context.
type presenceHook struct {
	apigrpc.UnimplementedClusterServer
	fn func(context.Context)
}

func (p *presenceHook) Presence(ctx context.Context, _ *api.PresenceRequest) (*api.PresenceResponse, error) {
	p.fn(ctx)
	return &api.PresenceResponse{}, nil
}

// authServer serves fn behind the node's cluster gRPC credentials and guard.
func authServer(t *testing.T, n *Node, fn func(context.Context)) (string, *grpc.Server) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(n.cl.Parts().Trust.ServerOptions()...)
	apigrpc.RegisterClusterServer(srv, &presenceHook{fn: fn})
	go srv.Serve(lis)
	return lis.Addr().String(), srv
}

func mustDial(t *testing.T, addr string, creds credentials.TransportCredentials) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
