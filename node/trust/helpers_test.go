package trust

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harn-dev/harn/util/clock"
)

// testMesh is one mesh CA in a temporary trust directory.
type testMesh struct {
	t   *testing.T
	dir string
	clk *clock.Fake
	a   *Authority
}

func newTestMesh(t *testing.T) *testMesh {
	t.Helper()
	clk := clock.NewFake(time.Now().Truncate(time.Second))
	dir := filepath.Join(t.TempDir(), "tls")
	a, created, err := InitAuthority(dir, clk)
	if err != nil || !created {
		t.Fatalf("InitAuthority: created=%v err=%v", created, err)
	}
	return &testMesh{t: t, dir: dir, clk: clk, a: a}
}

// issue makes a certificate for name and role from the mesh's current CA.
func (m *testMesh) issue(name string, role Role, ttl time.Duration) tls.Certificate {
	m.t.Helper()
	return issueFrom(m.t, m.a.CA(), name, role, ttl, m.clk.Now())
}

func issueFrom(t *testing.T, ca *CA, name string, role Role, ttl time.Duration, now time.Time) tls.Certificate {
	t.Helper()
	key, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.Issue(key.Public(), name, role, ttl, now)
	if err != nil {
		t.Fatal(err)
	}
	return TLSCertificate(cert, key)
}

// holder is a Holder with a certificate for name/role and the mesh's roots.
func (m *testMesh) holder(name string, role Role) *Holder {
	c := m.issue(name, role, 0)
	return NewHolder(&c, m.a.Roots())
}

// selfSigned is a certificate that claims a mesh identity but signs itself.
func selfSigned(t *testing.T, name string, role Role) tls.Certificate {
	t.Helper()
	ca, err := NewCA(time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// A CA certificate used as a leaf: self-signed, with no identity.
	return TLSCertificate(ca.Cert, ca.Key)
}

// handshakeResult is what one TLS connection on 127.0.0.1 came to.
type handshakeResult struct {
	srvErr, cliErr error
	appBytes       int64 // application bytes the server read
}

// handshake runs one real TLS connection on 127.0.0.1: the server
// handshakes, then reads what the client sends; the client handshakes,
// writes "ping" and reads the answer.
func handshake(t *testing.T, srvCfg, cliCfg *tls.Config) handshakeResult {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var app atomic.Int64
	srvDone := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			srvDone <- err
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		tc := tls.Server(c, srvCfg)
		if err := tc.Handshake(); err != nil {
			srvDone <- err
			return
		}
		buf := make([]byte, 4)
		n, err := tc.Read(buf)
		app.Add(int64(n))
		if err == nil {
			_, err = tc.Write([]byte("pong"))
		}
		srvDone <- err
	}()
	c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	tc := tls.Client(c, cliCfg)
	cliErr := tc.Handshake()
	if cliErr == nil {
		_, cliErr = tc.Write([]byte("ping"))
	}
	if cliErr == nil {
		buf := make([]byte, 4)
		_, cliErr = tc.Read(buf)
	}
	c.Close()
	var srvErr error
	select {
	case srvErr = <-srvDone:
	case <-time.After(10 * time.Second):
		t.Fatal("server side of the handshake did not finish")
	}
	return handshakeResult{srvErr: srvErr, cliErr: cliErr, appBytes: app.Load()}
}

// refused asserts that both sides failed, the server with want, and that
// the server read no application byte.
func (r handshakeResult) refusedBy(t *testing.T, want error) {
	t.Helper()
	if r.srvErr == nil || r.cliErr == nil {
		t.Fatalf("handshake accepted: server err %v, client err %v", r.srvErr, r.cliErr)
	}
	if want != nil && !errors.Is(r.srvErr, want) {
		t.Fatalf("server err = %v, want %v", r.srvErr, want)
	}
	if r.appBytes != 0 {
		t.Fatalf("server read %d application bytes from a refused client", r.appBytes)
	}
}

func (r handshakeResult) accepted(t *testing.T) {
	t.Helper()
	if r.srvErr != nil || r.cliErr != nil {
		t.Fatalf("handshake refused: server err %v, client err %v", r.srvErr, r.cliErr)
	}
}

func mustParse(t *testing.T, c tls.Certificate) *x509.Certificate {
	t.Helper()
	x, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return x
}
