package trust

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// joinEnv is a server's cluster gRPC port with the trust service, a
// health service standing in for the Cluster service, and the guard.
type joinEnv struct {
	m      *testMesh
	js     *JoinServer
	tokens *FileTokenStore
	revs   *RevocationList
	addr   string
}

func startJoinServer(t *testing.T, m *testMesh, serverCert tls.Certificate) *joinEnv {
	t.Helper()
	tokens := newStore(t)
	revs := NewRevocationList()
	js := &JoinServer{Authority: m.a, Tokens: tokens, Clock: m.clk, Revocations: revs,
		Keyring: func() ([]byte, error) { return []byte("keyring-blob"), nil },
		CheckName: func(name string) error {
			if name == "srv1" {
				return fmt.Errorf("node %q is a live member", name)
			}
			return nil
		}}
	h := NewHolder(&serverCert, m.a.Roots())
	g := &Guard{Revocations: revs, Clock: m.clk}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(ServerTLS(h, AllowAnonymous(), WithClock(m.clk), WithRevocations(revs)))),
		grpc.ChainUnaryInterceptor(g.Unary()), grpc.ChainStreamInterceptor(g.Stream()))
	RegisterService(srv, js)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ln) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	return &joinEnv{m: m, js: js, tokens: tokens, revs: revs, addr: ln.Addr().String()}
}

func (e *joinEnv) token(t *testing.T, opts TokenOptions) Token {
	t.Helper()
	tok, err := CreateToken(e.tokens, e.m.a.Fingerprint(), opts, e.m.clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestJoinIssuesCertForNameWithTokenRole(t *testing.T) {
	m := newTestMesh(t)
	e := startJoinServer(t, m, m.issue("srv1", RoleServer, 0))
	b, err := Join(ctx(t), e.addr, e.token(t, TokenOptions{}), "laptop", JoinClock(m.clk))
	if err != nil {
		t.Fatal(err)
	}
	if b.Identity.Name != "laptop" || b.Identity.Role != RoleNode || b.CA != nil || string(b.Keyring) != "keyring-blob" {
		t.Fatalf("bundle %+v", b)
	}
	if !b.Roots.Contains(m.a.Fingerprint()) {
		t.Fatal("roots miss the mesh CA")
	}
	dir := filepath.Join(t.TempDir(), "tls")
	if err := b.Save(dir); err != nil {
		t.Fatal(err)
	}
	if mode(t, filepath.Join(dir, FileNode)) != 0o600 || mode(t, dir) != 0o700 {
		t.Fatal("saved bundle too open")
	}
	// The new certificate passes the mesh's mutual TLS.
	c, err := LoadNodeCert(dir)
	if err != nil {
		t.Fatal(err)
	}
	handshake(t, m.server(), m.clientWith(&c)).accepted(t)
}

func TestServerTokenJoinReceivesCA(t *testing.T) {
	m := newTestMesh(t)
	e := startJoinServer(t, m, m.issue("srv1", RoleServer, 0))
	b, err := Join(ctx(t), e.addr, e.token(t, TokenOptions{Role: RoleServer}), "srv2", JoinClock(m.clk), JoinAsServer())
	if err != nil {
		t.Fatal(err)
	}
	if b.Identity.Role != RoleServer || b.CA == nil || !b.CA.Fingerprint().Equal(m.a.Fingerprint()) {
		t.Fatalf("server join: role %s, CA %v", b.Identity.Role, b.CA != nil)
	}
	dir := filepath.Join(t.TempDir(), "tls")
	if err := b.Save(dir); err != nil {
		t.Fatal(err)
	}
	a, err := LoadAuthority(dir, m.clk)
	if err != nil || !a.Fingerprint().Equal(m.a.Fingerprint()) {
		t.Fatalf("joined server cannot load the CA: %v", err)
	}
}

func TestServerTokenGivesNoCAToAJoinerNotStartedAsServer(t *testing.T) {
	m := newTestMesh(t)
	e := startJoinServer(t, m, m.issue("srv1", RoleServer, 0))
	b, err := Join(ctx(t), e.addr, e.token(t, TokenOptions{Role: RoleServer}), "laptop", JoinClock(m.clk))
	if err != nil {
		t.Fatal(err)
	}
	if b.Identity.Role != RoleNode || b.CA != nil {
		t.Fatalf("server token without --server: role %s, CA %v; want a node certificate and no CA", b.Identity.Role, b.CA != nil)
	}
}

func TestWrongCAPinRefusedBeforeTokenSent(t *testing.T) {
	m := newTestMesh(t)
	e := startJoinServer(t, m, m.issue("srv1", RoleServer, 0))
	tok := e.token(t, TokenOptions{Uses: 1})
	other := newTestMesh(t)
	tok.CA = other.a.Fingerprint() // the token pins another mesh's CA
	_, err := Join(ctx(t), e.addr, tok, "laptop", JoinClock(m.clk))
	if !errors.Is(err, ErrPinMismatch) {
		t.Fatalf("err %v, want ErrPinMismatch", err)
	}
	if st := e.js.Stats(); st.Joins != 0 {
		t.Fatalf("the server received %d join requests; the joiner sent the token to an unpinned server", st.Joins)
	}
	recs, _ := e.tokens.List()
	if len(recs) != 1 || recs[0].Used != 0 {
		t.Fatalf("token records %+v", recs)
	}
}

func TestWrongCAPinSendsNoApplicationByte(t *testing.T) {
	// An impostor: a plain TLS listener with a server certificate from
	// another CA, counting every application byte it decrypts.
	m := newTestMesh(t)
	imp := newTestMesh(t)
	h := imp.holder("srv1", RoleServer)
	cfg := ServerTLS(h, AllowAnonymous(), WithClock(imp.clk))
	cfg.NextProtos = []string{"h2"}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var got atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				tc := tls.Server(c, cfg)
				buf := make([]byte, 4096)
				for {
					n, err := tc.Read(buf)
					got.Add(int64(n))
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	tok, _, _ := NewToken(m.a.Fingerprint(), TokenOptions{}, m.clk.Now())
	if _, err := Join(ctx(t), ln.Addr().String(), tok, "laptop", JoinClock(m.clk)); !errors.Is(err, ErrPinMismatch) {
		t.Fatalf("err %v, want ErrPinMismatch", err)
	}
	if n := got.Load(); n != 0 {
		t.Fatalf("the impostor decrypted %d application bytes", n)
	}
}

func TestJoinerRefusesServerWithoutServerRole(t *testing.T) {
	m := newTestMesh(t)
	e := startJoinServer(t, m, m.issue("laptop2", RoleNode, 0)) // a node posing as a server
	_, err := Join(ctx(t), e.addr, e.token(t, TokenOptions{}), "laptop", JoinClock(m.clk))
	if !errors.Is(err, ErrWrongRole) || e.js.Stats().Joins != 0 {
		t.Fatalf("err %v, joins %d; want ErrWrongRole and none", err, e.js.Stats().Joins)
	}
}

func TestJoinTokenPastUsesRefused(t *testing.T) {
	m := newTestMesh(t)
	e := startJoinServer(t, m, m.issue("srv1", RoleServer, 0))
	tok := e.token(t, TokenOptions{Uses: 1})
	if _, err := Join(ctx(t), e.addr, tok, "laptop", JoinClock(m.clk)); err != nil {
		t.Fatal(err)
	}
	if _, err := Join(ctx(t), e.addr, tok, "desk", JoinClock(m.clk)); !errors.Is(err, ErrTokenUsedUp) {
		t.Fatalf("err %v, want ErrTokenUsedUp", err)
	}
}

func TestJoinTokenPastTTLRefused(t *testing.T) {
	m := newTestMesh(t)
	e := startJoinServer(t, m, m.issue("srv1", RoleServer, 0))
	tok := e.token(t, TokenOptions{TTL: time.Hour})
	m.clk.Advance(time.Hour)
	if _, err := Join(ctx(t), e.addr, tok, "laptop", JoinClock(m.clk)); !errors.Is(err, ErrTokenExpired) {
		t.Fatalf("err %v, want ErrTokenExpired", err)
	}
}

func TestJoinWrongSecretOrUnknownTokenRefused(t *testing.T) {
	m := newTestMesh(t)
	e := startJoinServer(t, m, m.issue("srv1", RoleServer, 0))
	tok := e.token(t, TokenOptions{})
	forged, _, _ := NewToken(m.a.Fingerprint(), TokenOptions{}, m.clk.Now())
	wrong := tok
	wrong.Secret = forged.Secret
	if _, err := Join(ctx(t), e.addr, wrong, "laptop", JoinClock(m.clk)); !errors.Is(err, ErrTokenSecret) {
		t.Fatalf("wrong secret: %v", err)
	}
	if _, err := Join(ctx(t), e.addr, forged, "laptop", JoinClock(m.clk)); !errors.Is(err, ErrTokenUnknown) {
		t.Fatalf("unknown token: %v", err)
	}
}

func TestJoinUnderTakenNameRefusedWithoutUsingToken(t *testing.T) {
	m := newTestMesh(t)
	e := startJoinServer(t, m, m.issue("srv1", RoleServer, 0))
	tok := e.token(t, TokenOptions{Uses: 1})
	if _, err := Join(ctx(t), e.addr, tok, "srv1", JoinClock(m.clk)); !errors.Is(err, ErrJoinRefused) {
		t.Fatalf("err %v, want ErrJoinRefused", err)
	}
	if _, err := Join(ctx(t), e.addr, tok, "laptop", JoinClock(m.clk)); err != nil {
		t.Fatalf("the refused join used the token: %v", err)
	}
}

// dialMesh is a gRPC client of the env's port with cert (or none).
func (e *joinEnv) dial(t *testing.T, cert *tls.Certificate) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(e.addr, grpc.WithTransportCredentials(credentials.NewTLS(e.m.clientWith(cert))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func TestAnonymousClientOutsideTheJoinPathRefusedAtHandshake(t *testing.T) {
	m := newTestMesh(t)
	e := startJoinServer(t, m, m.issue("srv1", RoleServer, 0))
	_, err := healthpb.NewHealthClient(e.dial(t, nil)).Check(ctx(t), &healthpb.HealthCheckRequest{})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("anonymous call without the join server name: %v; want a failed handshake", err)
	}
}

func TestAnonymousCallerLimitedToJoin(t *testing.T) {
	m := newTestMesh(t)
	e := startJoinServer(t, m, m.issue("srv1", RoleServer, 0))
	cfg := e.m.clientWith(nil)
	cfg.ServerName = JoinServerName
	anon, err := grpc.NewClient(e.addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { anon.Close() })
	_, err = healthpb.NewHealthClient(anon).Check(ctx(t), &healthpb.HealthCheckRequest{})
	if status.Code(err) != codes.Unauthenticated {
		t.Fatalf("anonymous call of another service: %v", err)
	}
	c := m.issue("laptop", RoleNode, 0)
	if _, err := healthpb.NewHealthClient(e.dial(t, &c)).Check(ctx(t), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("member call: %v", err)
	}
}

func TestAnonymousRenewRefused(t *testing.T) {
	m := newTestMesh(t)
	e := startJoinServer(t, m, m.issue("srv1", RoleServer, 0))
	cfg := e.m.clientWith(nil)
	cfg.ServerName = JoinServerName
	_, err := call(ctx(t), e.addr, cfg, RenewMethod, []byte("{}"))
	if err == nil || e.js.Stats().Renewals != 0 {
		t.Fatalf("anonymous renew: %v, renewals %d", err, e.js.Stats().Renewals)
	}
}

func TestRenewOverMutualTLS(t *testing.T) {
	m := newTestMesh(t)
	e := startJoinServer(t, m, m.issue("srv1", RoleServer, 0))
	c := m.issue("laptop", RoleNode, 0)
	h := NewHolder(&c, m.a.Roots())
	b, err := RenewAt(ctx(t), e.addr, h, WithClock(m.clk))
	if err != nil {
		t.Fatal(err)
	}
	if b.Identity.Name != "laptop" || b.Identity.Role != RoleNode || b.Identity.Serial == SerialString(c.Leaf) {
		t.Fatalf("renewed %+v", b.Identity)
	}
}

func TestRevokedCertRefusedOnOpenConnection(t *testing.T) {
	m := newTestMesh(t)
	e := startJoinServer(t, m, m.issue("srv1", RoleServer, 0))
	c := m.issue("laptop", RoleNode, 0)
	hc := healthpb.NewHealthClient(e.dial(t, &c))
	if _, err := hc.Check(ctx(t), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	e.revs.Add(SerialString(c.Leaf))
	if _, err := hc.Check(ctx(t), &healthpb.HealthCheckRequest{}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("revoked caller on an open connection: %v", err)
	}
	h := NewHolder(&c, m.a.Roots())
	if _, err := RenewAt(ctx(t), e.addr, h, WithClock(m.clk)); err == nil {
		t.Fatal("a revoked node renewed its certificate")
	}
}

func TestExpiredCertRefusedOnOpenConnection(t *testing.T) {
	m := newTestMesh(t)
	e := startJoinServer(t, m, m.issue("srv1", RoleServer, 0))
	c := m.issue("laptop", RoleNode, time.Hour)
	hc := healthpb.NewHealthClient(e.dial(t, &c))
	if _, err := hc.Check(ctx(t), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	m.clk.Advance(2 * time.Hour)
	if _, err := hc.Check(ctx(t), &healthpb.HealthCheckRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("expired caller on an open connection: %v", err)
	}
}

// TestJoinGuessesAreRateLimited: 200 wrong guesses from one address are
// answered, past the bucket, with ErrJoinRateLimited (ResourceExhausted)
// before the server looks at them; once the window has passed (on the
// fake clock), the right token joins.
func TestJoinGuessesAreRateLimited(t *testing.T) {
	m := newTestMesh(t)
	e := startJoinServer(t, m, m.issue("srv1", RoleServer, 0))
	good := e.token(t, TokenOptions{Uses: 1})
	wrong := good
	other := e.token(t, TokenOptions{Uses: 1})
	wrong.Secret = other.Secret // a well-formed secret, not good's
	limited, secret := 0, 0
	for i := range 200 {
		_, err := Join(ctx(t), e.addr, wrong, fmt.Sprintf("guess%d", i), JoinClock(m.clk))
		switch {
		case errors.Is(err, ErrJoinRateLimited):
			limited++
		case errors.Is(err, ErrTokenSecret):
			secret++
		default:
			t.Fatalf("guess %d: err %v", i, err)
		}
	}
	burst := DefaultJoinPerSource.Burst
	if secret != burst || limited != 200-burst {
		t.Fatalf("%d guesses checked and %d limited; want %d checked, the rest limited", secret, limited, burst)
	}
	if st := e.js.Stats(); st.Limited != int64(limited) || st.Joins != 200 {
		t.Fatalf("stats %+v", st)
	}
	// Within the window even the right token is refused: the limit is on
	// attempts, not on wrong ones.
	if _, err := Join(ctx(t), e.addr, good, "laptop", JoinClock(m.clk)); !errors.Is(err, ErrJoinRateLimited) {
		t.Fatalf("the right token within the window: %v, want ErrJoinRateLimited", err)
	}
	m.clk.Advance(DefaultJoinPerSource.Every)
	b, err := Join(ctx(t), e.addr, good, "laptop", JoinClock(m.clk))
	if err != nil || b.Identity.Name != "laptop" {
		t.Fatalf("the right token after the window: %v", err)
	}
}

// TestSuccessfulJoinsAreNotRateLimited: a fleet joining from one address
// (a rollout script, a NAT) is bounded by its token's uses, not by the
// limit meant for guesses: 100 joins with one token from one address all
// pass, concurrently, within the same instant of the fake clock, and the
// guesses after them still meet a full bucket, then the limit.
func TestSuccessfulJoinsAreNotRateLimited(t *testing.T) {
	m := newTestMesh(t)
	e := startJoinServer(t, m, m.issue("srv1", RoleServer, 0))
	const fleet = 100
	good := e.token(t, TokenOptions{Uses: fleet})
	errs := make(chan error, fleet)
	var wg sync.WaitGroup
	for i := range fleet {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := Join(ctx(t), e.addr, good, fmt.Sprintf("box%d", i), JoinClock(m.clk))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a join of the fleet: %v", err)
		}
	}
	wrong := e.token(t, TokenOptions{Uses: 1})
	wrong.Secret = good.Secret
	burst := DefaultJoinPerSource.Burst
	for i := range burst + 1 {
		_, err := Join(ctx(t), e.addr, wrong, fmt.Sprintf("guess%d", i), JoinClock(m.clk))
		if want := ErrTokenSecret; i == burst {
			want = ErrJoinRateLimited
			if !errors.Is(err, want) {
				t.Fatalf("guess %d after the fleet: %v, want %v", i, err, want)
			}
		} else if !errors.Is(err, want) {
			t.Fatalf("guess %d after the fleet: %v, want %v", i, err, want)
		}
	}
}

func TestJoinRateLimitIsPerSourceWithAGlobalCap(t *testing.T) {
	clk := time.Unix(1_700_000_000, 0)
	l := newJoinLimiter(JoinLimits{PerSource: Rate{Burst: 2, Every: time.Second}, Global: Rate{Burst: 5, Every: time.Second}, MaxSources: 3}, clk)
	now := func() time.Time { return clk }
	// fail is one attempt that fails (its token stays spent).
	fail := func(src string) error {
		settle, err := l.allow(context.Background(), src, now)
		if err == nil {
			settle(false)
		}
		return err
	}
	for _, src := range []string{"a", "a"} {
		if err := fail(src); err != nil {
			t.Fatal(err)
		}
	}
	if err := fail("a"); !errors.Is(err, ErrJoinRateLimited) {
		t.Fatalf("a's third: %v", err)
	}
	// a's refusal took nothing from the global bucket: b and c get 3.
	for _, src := range []string{"b", "b", "c"} {
		if err := fail(src); err != nil {
			t.Fatalf("%s: %v", src, err)
		}
	}
	if err := fail("c"); !errors.Is(err, ErrJoinRateLimited) {
		t.Fatalf("over the global cap: %v", err)
	}
	if err := fail("d"); !errors.Is(err, ErrJoinRateLimited) {
		t.Fatalf("a fourth address past MaxSources: %v", err)
	}
	clk = clk.Add(3 * time.Second) // every bucket full again: forgotten
	if err := fail("d"); err != nil {
		t.Fatalf("d after the window: %v", err)
	}
	if len(l.sources) != 1 {
		t.Fatalf("%d sources tracked, want the full ones forgotten", len(l.sources))
	}
}

// TestAJoinGivesItsAttemptBack: a join that succeeds costs its source
// nothing; one that fails spends a token; an attempt that finds the
// bucket empty while others are under way waits for them, and is refused
// when none is.
func TestAJoinGivesItsAttemptBack(t *testing.T) {
	clk := time.Unix(1_700_000_000, 0)
	l := newJoinLimiter(JoinLimits{PerSource: Rate{Burst: 1, Every: time.Hour}, Global: Rate{Burst: -1}}, clk)
	now := func() time.Time { return clk }
	for i := range 5 {
		settle, err := l.allow(context.Background(), "nat", now)
		if err != nil {
			t.Fatalf("join %d: %v", i, err)
		}
		settle(true)
	}
	settle, err := l.allow(context.Background(), "nat", now)
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() {
		s, err := l.allow(context.Background(), "nat", now)
		if err == nil {
			s(true)
		}
		waited <- err
	}()
	for i := 0; ; i++ {
		l.mu.Lock()
		w := l.waiting
		l.mu.Unlock()
		if w == 1 {
			break
		}
		select {
		case err := <-waited:
			t.Fatalf("an attempt behind one under way did not wait: %v", err)
		default:
		}
		if i > 5000 {
			t.Fatal("the second attempt neither waited nor ended")
		}
		time.Sleep(time.Millisecond)
	}
	settle(true) // the one under way joined: its token comes back
	if err := <-waited; err != nil {
		t.Fatalf("the waiting attempt after a join: %v", err)
	}
	settle, _ = l.allow(context.Background(), "nat", now)
	settle(false)
	if _, err := l.allow(context.Background(), "nat", now); !errors.Is(err, ErrJoinRateLimited) {
		t.Fatalf("after a failed attempt: %v, want ErrJoinRateLimited", err)
	}
}
