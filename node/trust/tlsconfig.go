package trust

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harn-dev/harn/util/clock"
)

// Holder holds this node's certificate and the trusted roots. Renewal and
// CA rotation swap them atomically; every TLS configuration of this package
// reads them at each handshake, so nothing restarts.
type Holder struct {
	mu     sync.Mutex // serialises the setters
	cert   atomic.Pointer[tls.Certificate]
	roots  atomic.Pointer[Roots]
	served atomic.Pointer[tls.Certificate] // cert plus its issuing CA
}

// NewHolder starts a holder with a certificate (may be nil, for a node
// that has not joined) and roots.
func NewHolder(cert *tls.Certificate, roots *Roots) *Holder {
	h := &Holder{}
	if cert != nil {
		h.SetCert(*cert)
	}
	h.SetRoots(roots)
	return h
}

// SetCert installs a new certificate for the next handshakes.
func (h *Holder) SetCert(c tls.Certificate) {
	if c.Leaf == nil && len(c.Certificate) > 0 {
		c.Leaf, _ = x509.ParseCertificate(c.Certificate[0])
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cert.Store(&c)
	h.chain()
}

// SetRoots installs the trusted CAs for the next handshakes.
func (h *Holder) SetRoots(r *Roots) {
	if r == nil {
		r = NewRoots()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.roots.Store(r)
	h.chain()
}

// chain computes the certificate a server presents: the leaf and the CA
// that signed it, so that a joining node can match the CA against the
// fingerprint its token pins. Peers that are members ignore the extra CA.
func (h *Holder) chain() {
	c := h.cert.Load()
	if c == nil || len(c.Certificate) == 0 {
		h.served.Store(c)
		return
	}
	served := *c
	served.Certificate = c.Certificate[:1:1]
	if c.Leaf != nil && h.roots.Load() != nil {
		for _, ca := range h.roots.Load().Certs() {
			if c.Leaf.CheckSignatureFrom(ca) == nil {
				served.Certificate = append(served.Certificate, ca.Raw)
				break
			}
		}
	}
	h.served.Store(&served)
}

// Cert returns the current certificate (nil before the first).
func (h *Holder) Cert() *tls.Certificate { return h.cert.Load() }

// Leaf returns the current certificate's parsed leaf (nil before the first).
func (h *Holder) Leaf() *x509.Certificate {
	if c := h.cert.Load(); c != nil {
		return c.Leaf
	}
	return nil
}

// Roots returns the trusted CAs.
func (h *Holder) Roots() *Roots { return h.roots.Load() }

// Identity is this node's identity per its current certificate.
func (h *Holder) Identity() (Identity, error) { return CertIdentity(h.Leaf()) }

var errNoOwnCert = errors.New("trust: this node has no certificate yet (join the mesh with --join-token)")

func (h *Holder) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := h.served.Load(); c != nil {
		return c, nil
	}
	return nil, errNoOwnCert
}

func (h *Holder) getClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	if c := h.cert.Load(); c != nil {
		return c, nil
	}
	return &tls.Certificate{}, nil // none: the server refuses us
}

// Revocations says whether a certificate serial (lowercase hex, as in
// Identity.Serial) is revoked. The node backs it with the registry's
// revocation list; it is consulted on every handshake and every call.
type Revocations interface {
	IsRevoked(serial string) bool
}

// RevocationList is an in-memory Revocations, safe for concurrent use.
type RevocationList struct {
	mu sync.RWMutex
	m  map[string]bool
}

// NewRevocationList returns a list holding serials.
func NewRevocationList(serials ...string) *RevocationList {
	l := &RevocationList{m: map[string]bool{}}
	for _, s := range serials {
		l.m[s] = true
	}
	return l
}

// Add revokes serial.
func (l *RevocationList) Add(serial string) {
	l.mu.Lock()
	l.m[serial] = true
	l.mu.Unlock()
}

// Replace sets the whole list (from a registry snapshot).
func (l *RevocationList) Replace(serials []string) {
	m := make(map[string]bool, len(serials))
	for _, s := range serials {
		m[s] = true
	}
	l.mu.Lock()
	l.m = m
	l.mu.Unlock()
}

// IsRevoked implements Revocations.
func (l *RevocationList) IsRevoked(serial string) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.m[serial]
}

// Option adjusts a TLS configuration.
type Option func(*verifier)

// RequireRole refuses a peer whose certificate does not carry role (raft:
// only servers send raft traffic).
func RequireRole(r Role) Option { return func(v *verifier) { v.role = r } }

// ExpectName refuses a peer whose certificate names another node (a client
// that dials a known member).
func ExpectName(name string) Option { return func(v *verifier) { v.name = name } }

// WithRevocations consults revs on every handshake.
func WithRevocations(revs Revocations) Option { return func(v *verifier) { v.revs = revs } }

// WithClock sets the clock that decides expiry (tests use a fake one).
func WithClock(c clock.Clock) Option { return func(v *verifier) { v.clk = c } }

// WithLogger logs every refused peer, naming its certificate.
func WithLogger(l *slog.Logger) Option { return func(v *verifier) { v.log = l } }

// AllowAnonymous lets a client without a certificate finish the handshake
// on the join path only (server side only): a client hello whose server
// name (SNI) is JoinServerName. The cluster gRPC port needs it for joins;
// its interceptor (Guard) then allows such a connection to call the Join
// method and nothing else. Every other client hello needs a certificate,
// so a client without one fails at the handshake. A client that does
// present a certificate is verified in full on either path.
func AllowAnonymous() Option { return func(v *verifier) { v.anon = true } }

// JoinServerName is the server name (SNI) a joining node sends: the one
// client hello a listener with AllowAnonymous accepts without a client
// certificate. It is a label, not a secret; what such a connection may do
// is bounded by the Guard (Join only) and the JoinServer (MaxConcurrent).
const JoinServerName = "join.harn.invalid"

// verifier checks a peer's certificate against the holder's live roots.
type verifier struct {
	h    *Holder
	role Role
	name string
	revs Revocations
	clk  clock.Clock
	log  *slog.Logger
	anon bool
}

func newVerifier(h *Holder, opts []Option) *verifier {
	v := &verifier{h: h, clk: clock.Real{}}
	for _, o := range opts {
		o(v)
	}
	return v
}

// verify checks a presented chain: signed by a trusted CA, valid now, for
// usage, carrying an identity, not revoked, with the required role and
// name.
func (v *verifier) verify(certs []*x509.Certificate, usage x509.ExtKeyUsage) (Identity, error) {
	if len(certs) == 0 {
		return Identity{}, ErrNoPeerCert
	}
	leaf := certs[0]
	id, idErr := CertIdentity(leaf)
	now := v.clk.Now()
	_, err := leaf.Verify(x509.VerifyOptions{Roots: v.h.Roots().Pool(), CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{usage}})
	if err != nil {
		var inv x509.CertificateInvalidError
		if errors.As(err, &inv) && inv.Reason == x509.Expired {
			return id, fmt.Errorf("%w: %s valid %s to %s, now %s", ErrExpired, describe(id, idErr, leaf),
				leaf.NotBefore.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
		}
		return id, fmt.Errorf("%w: %s: %w", ErrUntrusted, describe(id, idErr, leaf), err)
	}
	if idErr != nil {
		return id, idErr
	}
	if v.revs != nil && v.revs.IsRevoked(id.Serial) {
		return id, &RefusalError{Caller: id, Err: ErrRevoked}
	}
	if v.role != "" && id.Role != v.role {
		return id, &RefusalError{Caller: id, Err: ErrWrongRole, Detail: "this port requires role " + string(v.role)}
	}
	if v.name != "" && id.Name != v.name {
		return id, &RefusalError{Caller: id, Err: ErrWrongPeer, Detail: fmt.Sprintf("expected node %q", v.name)}
	}
	return id, nil
}

// describe names a certificate in an error, even one without an identity.
func describe(id Identity, idErr error, c *x509.Certificate) string {
	if idErr == nil {
		return id.String()
	}
	return fmt.Sprintf("certificate %q (serial %s)", clipName(c.Subject.CommonName), SerialString(c))
}

func (v *verifier) refused(side string, err error) error {
	if v.log != nil {
		v.log.Warn("trust: refused peer", "side", side, "err", err)
	}
	return err
}

// ServerTLS is the configuration for a listener of the mesh (the raft and
// cluster gRPC ports): TLS 1.3 only, a client certificate required and
// verified against the holder's roots (verify_incoming), its identity read,
// revocation and the required role checked. Options: RequireRole,
// WithRevocations, WithClock, WithLogger, AllowAnonymous.
//
// Verification runs in VerifyConnection, not in crypto/tls's own
// RequireAndVerifyClientCert, so that it reads the live roots (CA
// rotation) and the injected clock; it does the same chain check.
func ServerTLS(h *Holder, opts ...Option) *tls.Config {
	v := newVerifier(h, opts)
	strict := serverTLS(h, v, tls.RequireAnyClientCert)
	if !v.anon {
		return strict
	}
	join := serverTLS(h, v, tls.RequestClientCert)
	out := strict.Clone()
	out.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		if hello.ServerName == JoinServerName {
			return join, nil
		}
		return strict, nil
	}
	return out
}

// serverTLS is one server side: TLS 1.3, the client certificate asked for
// with auth and verified when present; an absent one is accepted only
// when auth does not require one.
func serverTLS(h *Holder, v *verifier, auth tls.ClientAuthType) *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS13,
		GetCertificate: h.getCertificate,
		ClientAuth:     auth,
		Time:           v.clk.Now,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 && auth == tls.RequestClientCert {
				return nil
			}
			if _, err := v.verify(cs.PeerCertificates, x509.ExtKeyUsageClientAuth); err != nil {
				return v.refused("server", err)
			}
			return nil
		},
	}
}

// ClientTLS is the configuration for dialing a mesh listener: TLS 1.3
// only, this node's certificate offered, the server's chain verified
// against the holder's roots (verify_outgoing) and its identity checked
// (ExpectName, RequireRole) in place of a host name (verify_server_hostname).
// crypto/tls's own host name check is off because mesh certificates name
// nodes, not addresses; VerifyConnection does the chain check.
func ClientTLS(h *Holder, opts ...Option) *tls.Config {
	v := newVerifier(h, opts)
	return &tls.Config{
		MinVersion:           tls.VersionTLS13,
		GetClientCertificate: h.getClientCertificate,
		InsecureSkipVerify:   true, // replaced by VerifyConnection below
		Time:                 v.clk.Now,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if _, err := v.verify(cs.PeerCertificates, x509.ExtKeyUsageServerAuth); err != nil {
				return v.refused("client", err)
			}
			return nil
		},
	}
}

// RaftTLS is one configuration for raftstore.NewStreamLayer, which uses
// the same config to listen and to dial. Incoming connections must come
// from a server (only servers send raft traffic: AppendEntries,
// RequestVote, snapshots); outgoing ones verify any mesh member (a leader
// replicates to non-voting nodes).
func RaftTLS(h *Holder, opts ...Option) *tls.Config {
	srv := ServerTLS(h, append(append([]Option(nil), opts...), RequireRole(RoleServer), func(v *verifier) { v.anon = false })...)
	cli := ClientTLS(h, opts...)
	return &tls.Config{
		MinVersion:           tls.VersionTLS13,
		GetCertificate:       srv.GetCertificate,
		ClientAuth:           srv.ClientAuth,
		GetClientCertificate: cli.GetClientCertificate,
		InsecureSkipVerify:   true, // see ClientTLS
		Time:                 srv.Time,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return srv, nil // the server side of the stream
		},
		VerifyConnection: cli.VerifyConnection, // the dialing side
	}
}
