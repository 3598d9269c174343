package raftstore

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// startTCP opens n stores on loopback with bolt stores under a temp dir,
// bootstraps them together and waits for a leader.
func startTCP(tb testing.TB, n int, base Config) []*Store {
	tb.Helper()
	dir := tb.TempDir()
	if base.Logger == nil {
		base.Logger = TestLogger(tb, slog.LevelWarn)
	}
	var stores []*Store
	var servers []Server
	for i := range n {
		cfg := base
		cfg.ID, cfg.Dir, cfg.BindAddr = fmt.Sprintf("t%d", i), filepath.Join(dir, fmt.Sprintf("t%d", i)), "127.0.0.1:0"
		s, err := New(cfg)
		if err != nil {
			tb.Fatal(err)
		}
		if err := s.Open(); err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { s.Close() })
		stores = append(stores, s)
		servers = append(servers, Server{ID: cfg.ID, Addr: s.Addr(), Voter: true})
	}
	for _, s := range stores {
		if err := s.Bootstrap(servers); err != nil {
			tb.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for _, s := range stores {
		if err := s.WaitForLeader(ctx); err != nil {
			tb.Fatal(err)
		}
	}
	return stores
}

func tcpLeader(tb testing.TB, stores []*Store) *Store {
	tb.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range stores {
			if s.IsLeader() {
				return s
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	tb.Fatal("no leader over TCP")
	return nil
}

func checkReplication(t *testing.T, stores []*Store) {
	t.Helper()
	// The upsert is idempotent: retry it (bounded) through whichever store
	// leads, since leadership may move on a loaded machine.
	cmd := UpsertCommand(Upsert{SessionID: "tcp", TS: at(1),
		Identity: &IdentityPatch{Node: "buildbox", Agent: "codex"}, Lifecycle: &LifecyclePatch{TaskState: "blocked", Reason: "review"}})
	var l *Store
	var idx uint64
	deadline := time.Now().Add(15 * time.Second)
	for {
		var err error
		l = tcpLeader(t, stores)
		if idx, err = l.Apply(ctxT(t), cmd); err == nil {
			break
		}
		if time.Now().After(deadline) || !(errors.Is(err, ErrNotLeader) || errors.Is(err, ErrUnknownOutcome)) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, s := range stores {
		if err := s.WaitForApplied(ctxT(t), idx); err != nil {
			t.Fatalf("%s: %v", s.ID(), err)
		}
		if rec, ok := s.Get("tcp"); !ok || rec.BlockerReason != "review" || rec.Node != "buildbox" {
			t.Fatalf("%s: %+v %v", s.ID(), rec, ok)
		}
	}
	st := l.Stats()
	if len(st.Servers) != len(stores) || st.Servers[0].Addr == "" {
		t.Fatalf("stats: %+v", st)
	}
}

func TestTCPReplication(t *testing.T) {
	checkReplication(t, startTCP(t, 3, TestConfig()))
}

func TestTLSReplication(t *testing.T) {
	server, client := selfSignedTLS(t)
	base := TestConfig()
	base.TLS = server
	stores := startTCP(t, 3, base)
	checkReplication(t, stores)

	// A peer without the cluster's certificate cannot speak to it.
	untrusted, _ := selfSignedTLS(t)
	conn, err := tls.Dial("tcp", stores[0].Addr(), &tls.Config{RootCAs: client.RootCAs, Certificates: untrusted.Certificates, MinVersion: tls.VersionTLS13})
	if err == nil {
		// TLS 1.3 reports a refused client certificate on first read.
		conn.SetDeadline(time.Now().Add(2 * time.Second))
		_, err = conn.Read(make([]byte, 1))
		conn.Close()
	}
	if err == nil {
		t.Fatal("a peer with an untrusted certificate was accepted")
	}
	// Plain TCP gets nothing either.
	raw, err := net.DialTimeout("tcp", stores[0].Addr(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	raw.Write([]byte("not tls\n"))
	raw.SetDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 64)
	if n, _ := raw.Read(buf); n > 0 && buf[0] != 0x15 { // 0x15: a TLS alert record
		t.Fatalf("plain TCP got a non-TLS answer: %q", buf[:n])
	}
	raw.Close()
}

// selfSignedTLS returns a mutual-TLS config pair built on one self-signed
// certificate for 127.0.0.1 (the server side also verifies clients).
func selfSignedTLS(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "harn raft test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
	server = &tls.Config{
		Certificates: []tls.Certificate{cert},
		RootCAs:      pool,
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS13,
	}
	client = &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}
	return server, client
}

// TestCloseStopsGoroutines: after Close, nothing a store started is left
// running.
func TestCloseStopsGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	base := TestConfig()
	base.Logger = slog.New(slog.DiscardHandler)
	stores := startTCP(t, 3, base)
	checkReplication(t, stores)
	// A wait abandoned by its context leaves a goroutine for Close.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tcpLeader(t, stores).Apply(ctx, UpsertCommand(Upsert{SessionID: "x", TS: at(1), Task: &TaskPatch{}}))
	for _, s := range stores {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before, %d after Close:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
