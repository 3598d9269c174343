package trust

import (
	"context"
	"crypto/tls"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestRenewerRenewsAfterTwoThirdsOfLifetime(t *testing.T) {
	m := newTestMesh(t)
	h := m.holder("srv1", RoleServer) // 30 days
	var saved atomic.Int64
	r := &Renewer{Holder: h, Clock: m.clk, Renew: SelfRenew(m.a, h, 0),
		Save: func(*Bundle) error { saved.Add(1); return nil }}
	old := SerialString(h.Leaf())
	m.clk.Advance(19 * 24 * time.Hour)
	if renewed, err := r.Check(context.Background()); renewed || err != nil {
		t.Fatalf("renewed at day 19: %v %v", renewed, err)
	}
	m.clk.Advance(24 * time.Hour) // day 20 = two thirds
	if renewed, err := r.Check(context.Background()); !renewed || err != nil {
		t.Fatalf("not renewed at day 20: %v %v", renewed, err)
	}
	if SerialString(h.Leaf()) == old || saved.Load() != 1 {
		t.Fatal("the holder still has the old certificate, or it was not saved")
	}
	id, _ := h.Identity()
	if id.Name != "srv1" || id.Role != RoleServer {
		t.Fatalf("identity changed on renewal: %+v", id)
	}
}

func TestRenewerMovesOntoNewCAAfterRotation(t *testing.T) {
	m := newTestMesh(t)
	h := m.holder("srv1", RoleServer)
	r := &Renewer{Holder: h, Clock: m.clk, Renew: SelfRenew(m.a, h, 0)}
	if err := m.a.Rotate(); err != nil {
		t.Fatal(err)
	}
	h.SetRoots(m.a.Roots())
	if renewed, err := r.Check(context.Background()); !renewed || err != nil {
		t.Fatalf("not renewed onto the new CA: %v %v", renewed, err)
	}
	if h.Leaf().CheckSignatureFrom(m.a.CA().Cert) != nil {
		t.Fatal("renewed certificate is not from the new CA")
	}
}

func TestRenewerFailureKeepsOldCertAndSaysRejoinWhenExpired(t *testing.T) {
	m := newTestMesh(t)
	h := m.holder("laptop", RoleNode)
	old := SerialString(h.Leaf())
	boom := errors.New("server unreachable")
	r := &Renewer{Holder: h, Clock: m.clk, Renew: func(context.Context) (*Bundle, error) { return nil, boom }}
	m.clk.Advance(31 * 24 * time.Hour)
	_, err := r.Check(context.Background())
	if !errors.Is(err, boom) || SerialString(h.Leaf()) != old {
		t.Fatalf("err %v", err)
	}
}

func TestRenewerLoopSwapsCertAndCloseWaits(t *testing.T) {
	m := newTestMesh(t)
	h := m.holder("srv1", RoleServer)
	old := SerialString(h.Leaf())
	m.clk.Advance(25 * 24 * time.Hour)
	r := &Renewer{Holder: h, Clock: m.clk, Renew: SelfRenew(m.a, h, 0), Interval: 10 * time.Millisecond}
	r.Start()
	deadline := time.Now().Add(10 * time.Second)
	for SerialString(h.Leaf()) == old && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	r.Close()
	if SerialString(h.Leaf()) == old {
		t.Fatal("the loop did not renew within 10 s")
	}
	// New handshakes use the renewed certificate.
	srv := ServerTLS(h, WithClock(m.clk))
	c := m.issue("laptop", RoleNode, 0)
	cli := m.clientWith(&c)
	var served string
	cli.VerifyConnection = chainVerify(cli.VerifyConnection, func(cs tls.ConnectionState) { served = SerialString(cs.PeerCertificates[0]) })
	handshake(t, srv, cli).accepted(t)
	if served != SerialString(h.Leaf()) {
		t.Fatal("a new handshake did not use the renewed certificate")
	}
	r.Close() // twice is fine
	r.Start() // after Close: nothing
}
