package node

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc/credentials"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/meshtrust"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/util/clock"
)

// openLone opens a lone node (no CA, no join) on a fresh data dir.
func openLone(t *testing.T, base, name string, adjust func(*Config)) *Node {
	t.Helper()
	cfg := trustConfig(t, base, name)
	if adjust != nil {
		adjust(&cfg)
	}
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// h2Preface is what a plaintext HTTP/2 (gRPC) client sends first: the
// connection preface and an empty SETTINGS frame.
var h2Preface = append([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), 0, 0, 0, 4, 0, 0, 0, 0, 0)

// plaintextGetsSettings sends the HTTP/2 preface in plaintext to addr and
// reports whether a SETTINGS frame came back (a plaintext gRPC server).
func plaintextGetsSettings(t *testing.T, addr string) bool {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := c.Write(h2Preface); err != nil {
		return false
	}
	hdr := make([]byte, 9)
	if _, err := io.ReadFull(c, hdr); err != nil {
		return false
	}
	return hdr[3] == 4 // frame type SETTINGS
}

func TestLoneNodeMakesItsOwnCAAtFirstStart(t *testing.T) {
	n := openLone(t, t.TempDir(), "lone", nil)
	if n.cl.Parts().Trust == nil || n.cl.Parts().Trust.Authority() == nil {
		t.Fatal("a lone node without a CA started without mesh trust")
	}
	id, err := n.cl.Parts().Trust.Holder().Identity()
	if err != nil || id.Name != "lone" || id.Role != trust.RoleServer {
		t.Fatalf("lone node's identity %v, %v; want server lone", id, err)
	}
	if !meshtrust.LoneCA(n.cl.Parts().Trust.Dir()) {
		t.Fatal("the CA made at the first start is not marked lone")
	}
	for _, f := range []string{trust.FileRoots, trust.FileCAKey, trust.FileNode, "keyring.json"} {
		if err := trust.CheckSecretFile(filepath.Join(n.cl.Parts().Trust.Dir(), f)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPlaintextClientGetsNoSettingsFromALoneDefaultNode(t *testing.T) {
	n := openLone(t, t.TempDir(), "lone", nil)
	for _, addr := range []string{n.RaftAddr(), n.RPCAddr()} {
		if plaintextGetsSettings(t, addr) {
			t.Fatalf("%s answered a plaintext HTTP/2 preface with SETTINGS", addr)
		}
	}
	plain := openLone(t, t.TempDir(), "plain", func(c *Config) { c.Cluster.InsecureMesh = true })
	if !plaintextGetsSettings(t, plain.RPCAddr()) {
		t.Fatal("the check is blind: an --insecure-mesh node's rpc port sent no SETTINGS either")
	}
}

// tlsRead handshakes with cfg at addr and reads: TLS 1.3 delivers a
// refused client certificate as an alert on the first read.
func tlsRead(addr string, cfg *tls.Config) error {
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	_, err = c.Read(make([]byte, 1))
	return err
}

func TestClientWithoutCertificateFailsHandshakeOnALoneNode(t *testing.T) {
	n := openLone(t, t.TempDir(), "lone", nil)
	for _, addr := range []string{n.RaftAddr(), n.RPCAddr()} {
		cfg := rawTLS(nil)
		cfg.NextProtos = []string{"h2"}
		// A timeout would mean the server kept the connection: refused
		// means an alert or a close right after the client's Finished.
		if err := tlsRead(addr, cfg); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("%s: a client without a certificate got %v; want the handshake refused", addr, err)
		}
		old := rawTLS(nil)
		old.MinVersion, old.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
		if err := tlsRead(addr, old); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("%s: TLS 1.2 got %v; want a refused handshake", addr, err)
		}
	}
	// The gRPC view: no call passes.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := dialCluster(t, n.RPCAddr(), credentials.NewTLS(rawTLS(nil))).Presence(ctx, &api.PresenceRequest{}); err == nil {
		t.Fatal("a client without a certificate called Presence")
	}
}

func TestJoinWithoutTokenOrCARefused(t *testing.T) {
	cfg := trustConfig(t, t.TempDir(), "joiner")
	cfg.Cluster.Join = []string{"127.0.0.1:1"}
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := n.Open(); !errors.Is(err, ErrJoinNeedsToken) || !errors.Is(err, ErrTrust) {
		t.Fatalf("--join without a token: %v; want ErrJoinNeedsToken", err)
	}
	if _, err := os.Stat(TrustDir(cfg.DataDir)); err == nil {
		if _, err := trust.LoadNodeCert(TrustDir(cfg.DataDir)); err == nil {
			t.Fatal("the refused joiner made a certificate")
		}
	}
}

func TestLoneCAReplacedByAJoinToken(t *testing.T) {
	m, _ := startTrustMesh(t)
	base := t.TempDir()
	lone := openLone(t, base, "tw1", nil)
	own := lone.cl.Parts().Trust.Authority().Fingerprint()
	lone.Close()
	// Asked to join without a token, it refuses and keeps its CA.
	cfg := m.joinCfg("tw1", "", false)
	cfg.DataDir = filepath.Join(base, "tw1")
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Open(); !errors.Is(err, ErrJoinNeedsToken) {
		t.Fatalf("a lone CA's node asked to join without a token: %v", err)
	}
	n.Close()
	cfg.Cluster.JoinToken = m.token(false, 0, 0)
	n, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Open(); err != nil {
		t.Fatalf("a lone CA's node joining with a token: %v", err)
	}
	defer n.Close()
	dir := TrustDir(cfg.DataDir)
	if meshtrust.LoneCA(dir) || n.cl.Parts().Trust.Authority() != nil {
		t.Fatal("the joined node still holds a lone CA")
	}
	if _, err := os.Stat(filepath.Join(dir, trust.FileCAKey)); err == nil {
		t.Fatal("the lone CA's key stayed after the join")
	}
	roots := n.cl.Parts().Trust.Holder().Roots()
	if roots.Contains(own) || !roots.Contains(m.nodes[0].cl.Parts().Trust.Authority().Fingerprint()) {
		t.Fatal("the joined node does not trust the mesh's CA alone")
	}
	if id, _ := n.cl.Parts().Trust.Holder().Identity(); id.Role != trust.RoleNode {
		t.Fatalf("joined with a node token: role %s", id.Role)
	}
	// Its registry is the mesh's: the one-node registry it led is gone, so
	// it never names itself a voter (and never elects itself). Not a
	// server, it holds no raft log and is not in the configuration.
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "raft")); err == nil || n.cl.Parts().Store != nil {
		t.Fatal("the joined node still holds the registry it led alone")
	}
	mesh.WaitFor(t, 30*time.Second, "the joined node's registry names tw0 the only server", func() bool {
		ss, err := n.cl.RaftServers()
		return err == nil && len(ss) == 1 && ss[0].ID == "tw0" && ss[0].Voter
	})
}

func TestTokenMakesTheLoneCATheMeshs(t *testing.T) {
	n := openLone(t, t.TempDir(), "lone", nil)
	out, err := n.trust.MeshAdmin(context.Background(), wire.AdminTokenCreate, []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if tc := out.(wire.TokenCreated); tc.Role != string(trust.RoleNode) {
		t.Fatalf("token role %s", tc.Role)
	}
	if meshtrust.LoneCA(n.cl.Parts().Trust.Dir()) {
		t.Fatal("a CA that made a join token is still marked lone: a join token could replace it")
	}
}

func TestServerTokenGivesNodeCertToAJoinerWithoutServer(t *testing.T) {
	m, _ := startTrustMesh(t)
	n := m.join("tw1", m.token(true, 0, 0), false)
	id, _ := n.cl.Parts().Trust.Holder().Identity()
	if id.Role != trust.RoleNode || n.cl.Parts().Trust.Authority() != nil {
		t.Fatalf("a server token redeemed without --server: role %s, CA %v", id.Role, n.cl.Parts().Trust.Authority() != nil)
	}
	if _, err := os.Stat(filepath.Join(TrustDir(n.cfg.DataDir), trust.FileCAKey)); err == nil {
		t.Fatal("ca-key.pem reached a node started without --server")
	}
	if b, _ := os.ReadFile(filepath.Join(TrustDir(n.cfg.DataDir), trust.FileRoots)); !bytes.Contains(b, []byte("CERTIFICATE")) {
		t.Fatal("no roots saved")
	}
}

// BenchmarkLoneCAMake is what a lone node's first start adds: the CA, the
// gossip keyring and the node's certificate, written to a fresh trust
// directory.
func BenchmarkLoneCAMake(b *testing.B) {
	base := b.TempDir()
	for i := 0; i < b.N; i++ {
		dir := filepath.Join(base, strconv.Itoa(i), "tls")
		if _, _, err := meshtrust.InitTrustDir(dir, "lone", nil, clock.Real{}); err != nil {
			b.Fatal(err)
		}
	}
}
