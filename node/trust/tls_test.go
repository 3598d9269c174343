package trust

import (
	"crypto/tls"
	"errors"
	"testing"
	"time"
)

// clientWith is a client config that presents cert (or nothing) and
// trusts the mesh.
func (m *testMesh) clientWith(cert *tls.Certificate, opts ...Option) *tls.Config {
	return ClientTLS(NewHolder(cert, m.a.Roots()), append([]Option{WithClock(m.clk)}, opts...)...)
}

func (m *testMesh) server(opts ...Option) *tls.Config {
	return ServerTLS(m.holder("srv1", RoleServer), append([]Option{WithClock(m.clk)}, opts...)...)
}

func TestMeshCertAccepted(t *testing.T) {
	m := newTestMesh(t)
	c := m.issue("laptop", RoleNode, 0)
	handshake(t, m.server(), m.clientWith(&c)).accepted(t)
}

func TestClientWithoutCertRefusedAtHandshake(t *testing.T) {
	m := newTestMesh(t)
	handshake(t, m.server(), m.clientWith(nil)).refusedBy(t, nil)
}

func TestSelfSignedClientCertRefusedAtHandshake(t *testing.T) {
	m := newTestMesh(t)
	c := selfSigned(t, "laptop", RoleNode)
	handshake(t, m.server(), m.clientWith(&c)).refusedBy(t, ErrUntrusted)
}

func TestClientCertFromAnotherCARefusedAtHandshake(t *testing.T) {
	m := newTestMesh(t)
	other := newTestMesh(t)
	c := other.issue("laptop", RoleNode, 0)
	handshake(t, m.server(), m.clientWith(&c)).refusedBy(t, ErrUntrusted)
}

func TestExpiredClientCertRefusedAtHandshake(t *testing.T) {
	m := newTestMesh(t)
	c := m.issue("laptop", RoleNode, time.Hour)
	srv := m.server()
	cli := m.clientWith(&c)
	handshake(t, srv, cli).accepted(t)
	m.clk.Advance(2 * time.Hour)
	handshake(t, srv, cli).refusedBy(t, ErrExpired)
}

func TestRevokedClientCertRefusedAtHandshake(t *testing.T) {
	m := newTestMesh(t)
	c := m.issue("laptop", RoleNode, 0)
	revs := NewRevocationList()
	srv := m.server(WithRevocations(revs))
	cli := m.clientWith(&c)
	handshake(t, srv, cli).accepted(t)
	revs.Add(SerialString(mustParse(t, c)))
	handshake(t, srv, cli).refusedBy(t, ErrRevoked)
	var re *RefusalError
	r := handshake(t, srv, cli)
	if !errors.As(r.srvErr, &re) || re.Caller.Name != "laptop" {
		t.Fatalf("refusal does not name the caller's certificate: %v", r.srvErr)
	}
}

func TestNodeCertRefusedWhereServerRoleRequired(t *testing.T) {
	m := newTestMesh(t)
	node := m.issue("laptop", RoleNode, 0)
	server := m.issue("srv2", RoleServer, 0)
	raft := RaftTLS(m.holder("srv1", RoleServer), WithClock(m.clk))
	dialer := func(c *tls.Certificate) *tls.Config { return RaftTLS(NewHolder(c, m.a.Roots()), WithClock(m.clk)) }
	handshake(t, raft, dialer(&node)).refusedBy(t, ErrWrongRole)
	handshake(t, raft, dialer(&server)).accepted(t)
}

func TestRaftLeaderMayDialNonVoter(t *testing.T) {
	m := newTestMesh(t)
	leader := m.issue("srv1", RoleServer, 0)
	nonVoter := RaftTLS(m.holder("laptop", RoleNode), WithClock(m.clk))
	// The non-voter's listener accepts the leader; the leader's dial
	// accepts a non-voter's certificate.
	handshake(t, nonVoter, RaftTLS(NewHolder(&leader, m.a.Roots()), WithClock(m.clk))).accepted(t)
}

func TestClientRefusesServerFromAnotherCA(t *testing.T) {
	m := newTestMesh(t)
	other := newTestMesh(t)
	c := m.issue("laptop", RoleNode, 0)
	r := handshake(t, other.server(), m.clientWith(&c))
	if !errors.Is(r.cliErr, ErrUntrusted) || r.appBytes != 0 {
		t.Fatalf("client err %v, app bytes %d; want ErrUntrusted and none", r.cliErr, r.appBytes)
	}
}

func TestClientChecksExpectedServerName(t *testing.T) {
	m := newTestMesh(t)
	c := m.issue("laptop", RoleNode, 0)
	r := handshake(t, m.server(), m.clientWith(&c, ExpectName("srv9")))
	if !errors.Is(r.cliErr, ErrWrongPeer) {
		t.Fatalf("client err %v, want ErrWrongPeer", r.cliErr)
	}
	handshake(t, m.server(), m.clientWith(&c, ExpectName("srv1"))).accepted(t)
}

func TestOnlyTLS13Accepted(t *testing.T) {
	m := newTestMesh(t)
	c := m.issue("laptop", RoleNode, 0)
	cli := m.clientWith(&c)
	cli.MinVersion, cli.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
	handshake(t, m.server(), cli).refusedBy(t, nil)
}

func TestRenewedCertUsedByNewHandshakes(t *testing.T) {
	m := newTestMesh(t)
	h := m.holder("srv1", RoleServer)
	srv := ServerTLS(h, WithClock(m.clk))
	c := m.issue("laptop", RoleNode, 0)
	var seen []string
	cli := m.clientWith(&c)
	cli.VerifyConnection = chainVerify(cli.VerifyConnection, func(cs tls.ConnectionState) {
		seen = append(seen, SerialString(cs.PeerCertificates[0]))
	})
	handshake(t, srv, cli).accepted(t)
	old := SerialString(h.Leaf())
	h.SetCert(m.issue("srv1", RoleServer, 0))
	handshake(t, srv, cli).accepted(t)
	if len(seen) != 2 || seen[0] != old || seen[1] != SerialString(h.Leaf()) || seen[0] == seen[1] {
		t.Fatalf("served serials %v, want old %s then the renewed one", seen, old)
	}
}

func chainVerify(f func(tls.ConnectionState) error, also func(tls.ConnectionState)) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if err := f(cs); err != nil {
			return err
		}
		also(cs)
		return nil
	}
}

func TestRotationOverlapTrustsBothCAs(t *testing.T) {
	m := newTestMesh(t)
	oldCert := m.issue("laptop", RoleNode, 0)
	if err := m.a.Rotate(); err != nil {
		t.Fatal(err)
	}
	newCert := m.issue("desk", RoleNode, 0)
	srvCert := m.issue("srv1", RoleServer, 0) // from the new CA
	srv := ServerTLS(NewHolder(&srvCert, m.a.Roots()), WithClock(m.clk))
	handshake(t, srv, m.clientWith(&oldCert)).accepted(t)
	handshake(t, srv, m.clientWith(&newCert)).accepted(t)
	// After the rotation is finished, the old CA's certificates are refused.
	if err := m.a.FinishRotation(); err != nil {
		t.Fatal(err)
	}
	srv = ServerTLS(NewHolder(&srvCert, m.a.Roots()), WithClock(m.clk))
	handshake(t, srv, m.clientWith(&oldCert)).refusedBy(t, ErrUntrusted)
	handshake(t, srv, m.clientWith(&newCert)).accepted(t)
}

func TestAnonymousAllowedOnlyOnTheJoinPath(t *testing.T) {
	m := newTestMesh(t)
	joinPath := func(c *tls.Config) *tls.Config { c.ServerName = JoinServerName; return c }
	handshake(t, m.server(AllowAnonymous()), joinPath(m.clientWith(nil))).accepted(t)
	// Without the join server name, a client without a certificate fails
	// at the handshake even on a listener that allows joins.
	handshake(t, m.server(AllowAnonymous()), m.clientWith(nil)).refusedBy(t, nil)
	other := newTestMesh(t)
	c := other.issue("laptop", RoleNode, 0)
	// A certificate, when presented, is verified in full even there.
	handshake(t, m.server(AllowAnonymous()), joinPath(m.clientWith(&c))).refusedBy(t, ErrUntrusted)
	own := m.issue("laptop", RoleNode, 0)
	handshake(t, m.server(AllowAnonymous()), m.clientWith(&own)).accepted(t)
}

func TestTLSBelow13RefusedAtHandshake(t *testing.T) {
	m := newTestMesh(t)
	c := m.issue("laptop", RoleNode, 0)
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS11} {
		cli := m.clientWith(&c)
		cli.MinVersion, cli.MaxVersion = v, v
		handshake(t, m.server(AllowAnonymous()), cli).refusedBy(t, nil)
	}
}
