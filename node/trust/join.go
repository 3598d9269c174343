package trust

import (
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/harn-dev/harn/util/clock"
)

// Bundle is what a node holds after joining: its identity, certificate and
// key, the trusted roots, the gossip keyring, and for a server the CA.
type Bundle struct {
	Identity Identity
	Cert     *x509.Certificate
	Key      crypto.Signer
	Roots    *Roots
	Keyring  []byte // opaque; the node stores it with its gossip keyring
	CA       *CA    // servers only
}

// TLSCertificate is the bundle's certificate for a Holder.
func (b *Bundle) TLSCertificate() tls.Certificate { return TLSCertificate(b.Cert, b.Key) }

// Save writes the certificate and key, the roots and (servers) the CA into
// the trust directory dir, 0700/0600. The keyring is not written here.
func (b *Bundle) Save(dir string) error {
	if b.CA != nil {
		if err := InstallCA(dir, b.CA, b.Roots); err != nil {
			return err
		}
	} else if err := SaveRoots(dir, b.Roots); err != nil {
		return err
	}
	return SaveNodeCert(dir, b.Cert, b.Key)
}

// JoinOption adjusts Join.
type JoinOption func(*joinCfg)

type joinCfg struct {
	clk    clock.Clock
	server bool
}

// JoinClock sets the clock that checks the server's certificate.
func JoinClock(c clock.Clock) JoinOption { return func(j *joinCfg) { j.clk = c } }

// JoinAsServer asks for a server certificate and the CA: the node starts
// with --server. Without it a server token yields a node certificate and
// no CA key.
func JoinAsServer() JoinOption { return func(j *joinCfg) { j.server = true } }

// Join joins the mesh through the server at addr (its cluster gRPC
// address, host:port). It verifies the server before sending anything: the
// server's chain must end at a CA whose SHA-256 is the one the token pins
// (no system roots), and its certificate must carry the server role. Only
// then does it send the token's id and secret and a CSR for a new key; it
// checks the answer against what it asked for. Errors wrap ErrPinMismatch,
// ErrTokenUnknown, ErrTokenSecret, ErrTokenExpired, ErrTokenUsedUp,
// ErrJoinRefused, ErrBadMessage or a network error.
func Join(ctx context.Context, addr string, tok Token, name string, opts ...JoinOption) (*Bundle, error) {
	cfg := joinCfg{clk: clock.Real{}}
	for _, o := range opts {
		o(&cfg)
	}
	if err := ValidName(name); err != nil {
		return nil, err
	}
	key, err := NewKey()
	if err != nil {
		return nil, fmt.Errorf("trust: key: %w", err)
	}
	csr, err := NewCSR(key, name, RoleNode)
	if err != nil {
		return nil, err
	}
	req, err := EncodeJoinRequest(&JoinRequest{TokenID: tok.ID, Secret: tok.Secret, Name: name, CSR: csr, Server: cfg.server})
	if err != nil {
		return nil, err
	}
	pin := &pinCheck{pin: tok.CA, clk: cfg.clk}
	out, err := call(ctx, addr, pin.config(), JoinMethod, req)
	if perr := pin.failure(); perr != nil {
		return nil, fmt.Errorf("join %s: %w", addr, perr)
	}
	if err != nil {
		return nil, fmt.Errorf("join %s: %w", addr, err)
	}
	p, err := DecodeJoinResponse(out, cfg.clk.Now())
	if err != nil {
		return nil, fmt.Errorf("join %s: %w", addr, err)
	}
	if err := checkIssued(p, key, name); err != nil {
		return nil, fmt.Errorf("join %s: %w", addr, err)
	}
	if !p.Roots.Contains(tok.CA) {
		return nil, fmt.Errorf("join %s: %w: the pinned CA is not among the roots returned", addr, ErrPinMismatch)
	}
	if !cfg.server && (p.CA != nil || p.Identity.Role == RoleServer) {
		return nil, fmt.Errorf("join %s: %w: the server handed a server certificate or the CA to a node that did not ask for them", addr, ErrBadMessage)
	}
	return &Bundle{Identity: p.Identity, Cert: p.Cert, Key: key, Roots: p.Roots, Keyring: p.Keyring, CA: p.CA}, nil
}

// checkIssued checks that the certificate is for our key and name.
func checkIssued(p *ParsedResponse, key crypto.Signer, name string) error {
	if !publicKeysEqual(p.Cert.PublicKey, key.Public()) {
		return fmt.Errorf("%w: the certificate is not for this node's key", ErrBadMessage)
	}
	if p.Identity.Name != name {
		return fmt.Errorf("%w: the certificate names %q, not %q", ErrBadMessage, p.Identity.Name, name)
	}
	return nil
}

// RenewAt asks the server at addr, over mutual TLS with the holder's
// current certificate, for a new certificate for a new key. It is the
// callback a Renewer of a non-server node uses (a server signs its own).
func RenewAt(ctx context.Context, addr string, h *Holder, opts ...Option) (*Bundle, error) {
	cur, err := h.Identity()
	if err != nil {
		return nil, err
	}
	key, err := NewKey()
	if err != nil {
		return nil, fmt.Errorf("trust: key: %w", err)
	}
	csr, err := NewCSR(key, cur.Name, cur.Role)
	if err != nil {
		return nil, err
	}
	req, err := EncodeRenewRequest(&RenewRequest{CSR: csr})
	if err != nil {
		return nil, err
	}
	v := newVerifier(h, opts)
	out, err := call(ctx, addr, ClientTLS(h, append(opts, RequireRole(RoleServer))...), RenewMethod, req)
	if err != nil {
		return nil, fmt.Errorf("renew at %s: %w", addr, err)
	}
	p, err := DecodeJoinResponse(out, v.clk.Now())
	if err != nil {
		return nil, fmt.Errorf("renew at %s: %w", addr, err)
	}
	if err := checkIssued(p, key, cur.Name); err != nil {
		return nil, fmt.Errorf("renew at %s: %w", addr, err)
	}
	if p.Identity.Role != cur.Role {
		return nil, fmt.Errorf("renew at %s: %w: role changed to %s", addr, ErrBadMessage, p.Identity.Role)
	}
	return &Bundle{Identity: p.Identity, Cert: p.Cert, Key: key, Roots: p.Roots}, nil
}

// call makes one unary call of the trust service over TLS.
func call(ctx context.Context, addr string, cfg *tls.Config, method string, req []byte) ([]byte, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxJoinResponse+1024)))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	out := new(wrapperspb.BytesValue)
	if err := conn.Invoke(ctx, method, wrapperspb.Bytes(req), out); err != nil {
		return nil, fromStatus(err)
	}
	return out.GetValue(), nil
}

// pinCheck verifies a join server against the token's CA fingerprint and
// remembers why it refused one.
type pinCheck struct {
	pin Fingerprint
	clk clock.Clock
	mu  sync.Mutex
	err error
}

func (p *pinCheck) failure() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// config trusts only the pinned CA, presents no certificate, and checks
// the server role.
func (p *pinCheck) config() *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS13,
		ServerName:         JoinServerName, // the listener's join path: no client certificate needed
		InsecureSkipVerify: true,           // replaced by the pin check below
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return &tls.Certificate{}, nil
		},
		Time: p.clk.Now,
		VerifyConnection: func(cs tls.ConnectionState) error {
			err := p.verify(cs.PeerCertificates)
			if err != nil {
				p.mu.Lock()
				if p.err == nil {
					p.err = err
				}
				p.mu.Unlock()
			}
			return err
		},
	}
}

func (p *pinCheck) verify(certs []*x509.Certificate) error {
	if len(certs) == 0 {
		return fmt.Errorf("%w: the server presented no certificate", ErrPinMismatch)
	}
	var ca *x509.Certificate
	var seen []string
	for _, c := range certs[1:] {
		fp := FingerprintOf(c)
		if fp.Equal(p.pin) {
			ca = c
			break
		}
		seen = append(seen, fp.String())
	}
	if ca == nil {
		return fmt.Errorf("%w: want %s, the server presented %v (is the token for this mesh, and was the CA rotated since it was made?)", ErrPinMismatch, p.pin, seen)
	}
	if !ca.IsCA {
		return fmt.Errorf("%w: the pinned certificate is not a CA", ErrPinMismatch)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	leaf := certs[0]
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: p.clk.Now(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return fmt.Errorf("%w: the server's certificate does not verify against the pinned CA: %w", ErrPinMismatch, err)
	}
	id, err := CertIdentity(leaf)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrPinMismatch, err)
	}
	if id.Role != RoleServer {
		return fmt.Errorf("%w: %s is not a server", ErrWrongRole, id)
	}
	return nil
}
