package e2e

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/apigrpc"
)

// No plaintext mesh by default: a lone `harn node` (and the node a hook
// starts) makes its own CA at its first start and speaks mutual TLS 1.3
// only on raft and the cluster gRPC.

// h2Preface is a plaintext HTTP/2 client's first bytes: the connection
// preface and an empty SETTINGS frame.
var h2Preface = append([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), 0, 0, 0, 4, 0, 0, 0, 0, 0)

// plaintextGetsSettings reports whether addr answers a plaintext HTTP/2
// preface with a SETTINGS frame (a plaintext gRPC server does).
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
	return hdr[3] == 4
}

// tlsRefused reports whether a TLS client with cfg is refused at addr: the
// handshake fails, or (TLS 1.3 sends the client's certificate last) the
// first read gets the server's alert. A read that times out means the
// server kept the connection: not refused.
func tlsRefused(addr string, cfg *tls.Config) (bool, error) {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return true, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	_, err = c.Read(make([]byte, 1))
	return err != nil && !errors.Is(err, os.ErrDeadlineExceeded), err
}

func TestSecurityPlaintextClientRefusedByALoneDefaultNode(t *testing.T) {
	m := newMeshNode(t, "lone")
	m.start()
	rpc := net.JoinHostPort("127.0.0.1", strconv.Itoa(m.rpc))
	for _, addr := range []string{m.raftStr, rpc} {
		if plaintextGetsSettings(t, addr) {
			t.Errorf("%s answered a plaintext HTTP/2 preface with SETTINGS", addr)
		}
		noCert := &tls.Config{MinVersion: tls.VersionTLS13, InsecureSkipVerify: true, NextProtos: []string{"h2"}}
		if ok, err := tlsRefused(addr, noCert); !ok {
			t.Errorf("%s: a TLS client without a certificate was not refused at the handshake (%v)", addr, err)
		}
		old := &tls.Config{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12, InsecureSkipVerify: true}
		if ok, err := tlsRefused(addr, old); !ok {
			t.Errorf("%s: TLS 1.2 was not refused (%v)", addr, err)
		}
	}
	for name, creds := range map[string]credentials.TransportCredentials{
		"plaintext":                 insecure.NewCredentials(),
		"tls without a certificate": credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS13, InsecureSkipVerify: true}),
	} {
		cc, err := grpc.NewClient(rpc, grpc.WithTransportCredentials(creds))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if _, err := apigrpc.NewClusterClient(cc).Presence(ctx, &api.PresenceRequest{}); err == nil {
			t.Errorf("%s: Presence answered", name)
		}
		cancel()
		cc.Close()
	}
	if err := rawRaftAppend(t, m.raftStr); err == nil {
		t.Error("a raw raft client's AppendEntries was read by a lone default node")
	}
	// The same node started with --insecure-mesh does answer in
	// plaintext: the checks above are not blind.
	m.stop()
	plain := newMeshNode(t, "plain", "--insecure-mesh")
	plain.start()
	if !plaintextGetsSettings(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(plain.rpc))) {
		t.Error("an --insecure-mesh node sent no SETTINGS: the check is blind")
	}
}

func TestHookStartedNodeMakesItsOwnCA(t *testing.T) {
	e := newEnv(t)
	cwd := t.TempDir()
	e.hook("claude-code", claudeStart("tls-hook-start-5e1a", cwd))
	eventually(t, readyTimeout, "the node the hook started answers", func() (bool, string) {
		_, ok := e.nodeStatus()
		return ok, "no node on " + e.socket
	})
	for _, f := range []string{"ca.pem", "ca-key.pem", "node.pem", "keyring.json", "lone-ca"} {
		if _, err := os.Stat(filepath.Join(e.dataDir, "tls", f)); err != nil {
			t.Errorf("the node a hook started has no tls/%s: %v", f, err)
		}
	}
	var st struct {
		Roots     []string `json:"roots"`
		OnCurrent bool     `json:"on_current"`
	}
	mustJSON(t, e.ok("mesh", "ca", "status", "--json"), &st)
	if len(st.Roots) != 1 || !st.OnCurrent {
		t.Fatalf("the node a hook started: CA status %+v; want its own CA", st)
	}
}

func TestJoinWithoutTokenExitsWithTrustCode(t *testing.T) {
	seed := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePorts(t, 1)[0]))
	m := newMeshNode(t, "joiner", "--join", seed)
	start := time.Now()
	r := runFor(t, 20*time.Second, m.base, append([]string{"node", "--data-dir", m.dataDir, "--socket", m.socket}, m.nodeArgs()...)...)
	line := strings.TrimSuffix(r.stderr, "\n")
	if r.code != exitTrust || strings.Contains(line, "\n") || !strings.Contains(line, "--join-token") {
		t.Fatalf("--join without a token or a CA: want exit %d and one line naming --join-token, got %v", exitTrust, r)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the refusal took %v", took)
	}
	if _, err := os.Stat(filepath.Join(m.dataDir, "tls", "node.pem")); err == nil {
		t.Error("the refused joiner made itself a certificate")
	}
}

// tokenRole runs a token command with environ and returns the role it
// printed in --json.
func tokenRole(t *testing.T, e *env, environ []string, args ...string) string {
	t.Helper()
	r := run(t, environ, "", append(args, "--data-dir", e.dataDir, "--socket", e.socket, "--json")...)
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	var out struct {
		Role string `json:"role"`
	}
	mustJSON(t, r.stdout, &out)
	return out.Role
}

func TestTokenRoleComesOnlyFromTheCommandLine(t *testing.T) {
	t.Run("config file", func(t *testing.T) {
		e := newEnv(t)
		cfgDir := filepath.Join(e.root, "xdg-config", "harn")
		if err := os.MkdirAll(cfgDir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cfgDir, "config.json"), []byte("server = true\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := tokenRole(t, e, e.base, "mesh", "init", "--name", "s0"); got != "node" {
			t.Errorf("mesh init with server = true in the config file: role %q, want node", got)
		}
		if got := tokenRole(t, e, e.base, "token", "create"); got != "node" {
			t.Errorf("token create (offline) with server = true in the config file: role %q, want node", got)
		}
		if got := tokenRole(t, e, e.base, "token", "create", "--server"); got != "server" {
			t.Errorf("token create --server: role %q, want server", got)
		}
	})
	t.Run("environment", func(t *testing.T) {
		s0 := newMeshNode(t, "s0")
		srvEnv := append(append([]string(nil), s0.base...), "HARN_SERVER=true")
		s0.base = srvEnv // the node itself is a server through the environment
		s0.start()
		if got := tokenRole(t, s0.env, srvEnv, "token", "create"); got != "node" {
			t.Fatalf("token create with HARN_SERVER=true: role %q, want node", got)
		}
		r := run(t, srvEnv, "", "token", "create", "--data-dir", s0.dataDir, "--socket", s0.socket)
		if r.code != 0 || !strings.Contains(r.stderr, "role node") {
			t.Fatalf("token create's human output does not say role node: %v", r)
		}
		// A server token redeemed by a node started without --server gives
		// a node certificate and no CA key.
		var tok struct {
			JoinToken string `json:"join_token"`
			Role      string `json:"role"`
		}
		r = run(t, srvEnv, "", "token", "create", "--server", "--json", "--data-dir", s0.dataDir, "--socket", s0.socket)
		mustJSON(t, r.stdout, &tok)
		if tok.Role != "server" {
			t.Fatalf("token create --server: %v", r)
		}
		n1 := newMeshNode(t, "n1", "--join", s0.gossipAddr, "--join-rpc", net.JoinHostPort("127.0.0.1", strconv.Itoa(s0.rpc)),
			"--join-token", tok.JoinToken)
		n1.start()
		if _, err := os.Stat(filepath.Join(n1.dataDir, "tls", "ca-key.pem")); err == nil {
			t.Fatal("a joiner started without --server received ca-key.pem")
		}
		var st struct {
			Roots []string `json:"roots"`
		}
		mustJSON(t, n1.ok("mesh", "ca", "status", "--json"), &st)
		if len(st.Roots) != 1 {
			t.Fatalf("the joiner's CA status %+v", st)
		}
	})
}

func TestLoneNodeJoinsAMeshWithATokenAndKeepsItsSessions(t *testing.T) {
	s0, _ := trustedMesh(t)
	var tok struct {
		JoinToken string `json:"join_token"`
	}
	mustJSON(t, s0.ok("token", "create", "--json"), &tok)
	lone := newMeshNode(t, "laptop")
	lone.start()
	sid := "lone-then-joined-7c2e"
	startClaudeSession(lone, sid, t.TempDir())
	lone.stop()
	lone.flags = append(lone.flags, "--join", s0.gossipAddr, "--join-rpc", net.JoinHostPort("127.0.0.1", strconv.Itoa(s0.rpc)))
	// Without a token, its own CA cannot join: refused with the fix.
	r := runFor(t, 20*time.Second, lone.base, append([]string{"node", "--data-dir", lone.dataDir, "--socket", lone.socket}, lone.nodeArgs()...)...)
	if r.code != exitTrust || !strings.Contains(r.stderr, "--join-token") {
		t.Fatalf("a lone CA's node joining without a token: %v", r)
	}
	lone.flags = append(lone.flags, "--join-token", tok.JoinToken)
	lone.start()
	if _, err := os.Stat(filepath.Join(lone.dataDir, "tls", "ca-key.pem")); err == nil {
		ents, _ := os.ReadDir(filepath.Join(lone.dataDir, "tls"))
		var names []string
		for _, e := range ents {
			fi, _ := e.Info()
			names = append(names, e.Name()+"@"+fi.ModTime().Format(time.StampMicro))
		}
		t.Fatalf("the joined node kept its lone CA's key: %v", names)
	}
	if !inList(lone.list(true), sid) {
		t.Fatalf("the joined node lost its session %s", sid)
	}
	eventually(t, meshTimeout, "s0 sees the joined node's session", func() (bool, string) {
		_, ok, why := s0.session(false, sid)
		return ok, why
	})
}
