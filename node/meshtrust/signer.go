package meshtrust

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/util/clock"
)

// Signer is mesh.Signer over the node's mesh certificate: a delta or
// push/pull state is signed with the key of the certificate in the trust
// holder, and a peer's is checked against the certificate of the node it
// claims to come from, which must chain to the mesh CA, be valid now and
// not be revoked. Certificates travel in push/pull (a node's own and those
// it knows of others: each is checked on its own, so a relay need not be
// trusted); a delta names its signer by the certificate's fingerprint.
type Signer struct {
	holder *trust.Holder
	revs   trust.Revocations
	clock  clock.Clock
	// OnUnknown is told (outside any lock) of an origin whose signing
	// certificate is not known yet; nil: nothing. Set it before use.
	OnUnknown func(origin string)

	mu    sync.Mutex
	relay int                      // where the next Credentials starts among the known names
	certs map[string][]*signerCert // node name -> known certificates, newest first
	fps   map[fingerprint]*signerCert
	own   *ownKey
}

var _ mesh.Signer = (*Signer)(nil)

// fingerprint is the first 16 bytes of a certificate's SHA-256.
type fingerprint [16]byte

func fingerprintOf(der []byte) fingerprint {
	sum := sha256.Sum256(der)
	return fingerprint(sum[:16])
}

// signerCert is a peer certificate that passed the checks against roots.
type signerCert struct {
	fp     fingerprint
	cert   *x509.Certificate
	name   string
	serial string
	roots  *trust.Roots // what it was checked against (a rotation re-checks)
}

// ownKey caches this node's signing key and fingerprint per certificate.
type ownKey struct {
	leaf   *x509.Certificate
	signer crypto.Signer
	fp     fingerprint
}

// Bounds of what peers hand over.
const (
	// CredRelay bounds the other nodes' certificates one push/pull
	// relays (Credentials).
	CredRelay        = 16
	sigFormat        = 1    // first byte of a signature
	maxCredCerts     = 1024 // certificates in one push/pull
	maxCertDER       = 8 << 10
	MaxSignerNames   = 4096 // names the signer keeps certificates for
	certsPerName     = 2    // the current one and the one before a renewal
	UnknownPullEvery = 5 * time.Second
)

// Signature errors of the gossip signer (each wraps mesh's sentinel).
var (
	errSignerRevoked = fmt.Errorf("%w: the signer's certificate is revoked", mesh.ErrBadSignature)
	errSignerExpired = fmt.Errorf("%w: the signer's certificate is not valid now", mesh.ErrBadSignature)
)

// NewSigner returns a signer over the certificate in h, checking peers'
// against revs.
func NewSigner(h *trust.Holder, revs trust.Revocations, clk clock.Clock) *Signer {
	return &Signer{holder: h, revs: revs, clock: clk,
		certs: map[string][]*signerCert{}, fps: map[fingerprint]*signerCert{}}
}

// key returns this node's current signing key.
func (s *Signer) key() (*ownKey, error) {
	c := s.holder.Cert()
	if c == nil || c.Leaf == nil {
		return nil, errors.New("node: no mesh certificate to sign gossip with")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.own != nil && s.own.leaf == c.Leaf {
		return s.own, nil
	}
	sg, ok := c.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("node: the mesh certificate's key (%T) cannot sign", c.PrivateKey)
	}
	s.own = &ownKey{leaf: c.Leaf, signer: sg, fp: fingerprintOf(c.Leaf.Raw)}
	return s.own, nil
}

// Credentials: this node's certificate first, then the newest known one
// of up to CredRelay other nodes, each as a uvarint length and DER. The
// others are taken in turn from one push/pull to the next, so that every
// certificate this node knows travels on, while a push/pull's size stays
// the same however large the mesh (a certificate not relayed yet is
// learnt from its node's own push/pull, or from the TLS handshake of the
// pull that an unknown signer starts).
func (s *Signer) Credentials() []byte {
	b := []byte{1}
	var ders [][]byte
	if leaf := s.holder.Leaf(); leaf != nil {
		ders = append(ders, leaf.Raw)
	}
	now := s.clock.Now()
	s.mu.Lock()
	names := make([]string, 0, len(s.certs))
	for name := range s.certs {
		names = append(names, name)
	}
	slices.Sort(names)
	for i := range names {
		if len(ders) > CredRelay {
			break
		}
		cs := s.certs[names[(s.relay+i)%len(names)]]
		if c := cs[0]; now.Before(c.cert.NotAfter) && !s.revs.IsRevoked(c.serial) {
			ders = append(ders, c.cert.Raw)
		}
	}
	if len(names) > 0 {
		s.relay = (s.relay + CredRelay) % len(names)
	}
	s.mu.Unlock()
	b = binary.AppendUvarint(b, uint64(len(ders)))
	for _, d := range ders {
		b = binary.AppendUvarint(b, uint64(len(d)))
		b = append(b, d...)
	}
	return b
}

// Sign: format byte, this certificate's fingerprint, the signature of
// msg's SHA-256 (ASN.1 for ECDSA).
func (s *Signer) Sign(msg []byte) ([]byte, error) {
	k, err := s.key()
	if err != nil {
		return nil, err
	}
	var sig []byte
	if _, ok := k.signer.Public().(ed25519.PublicKey); ok {
		sig, err = k.signer.Sign(rand.Reader, msg, crypto.Hash(0))
	} else {
		sum := sha256.Sum256(msg)
		sig, err = k.signer.Sign(rand.Reader, sum[:], crypto.SHA256)
	}
	if err != nil {
		return nil, fmt.Errorf("node: sign gossip: %w", err)
	}
	out := make([]byte, 0, 1+len(k.fp)+len(sig))
	out = append(out, sigFormat)
	out = append(out, k.fp[:]...)
	return append(out, sig...), nil
}

// Learn checks and keeps each certificate in creds that is new: it must
// chain to the mesh CA, be valid now, carry a node identity and not be
// revoked. It is kept under the name it carries, whatever origin says.
func (s *Signer) Learn(_ string, creds []byte) error {
	if len(creds) == 0 || creds[0] != 1 {
		return fmt.Errorf("%w: malformed credentials", mesh.ErrBadSignature)
	}
	b := creds[1:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > maxCredCerts {
		return fmt.Errorf("%w: malformed credentials", mesh.ErrBadSignature)
	}
	b = b[k:]
	var first error
	for i := uint64(0); i < n; i++ {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > maxCertDER || l > uint64(len(b)-k) {
			return fmt.Errorf("%w: malformed credentials", mesh.ErrBadSignature)
		}
		der := b[k : k+int(l)]
		b = b[k+int(l):]
		if err := s.learnCert(der); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (s *Signer) learnCert(der []byte) error {
	fp := fingerprintOf(der)
	roots := s.holder.Roots()
	s.mu.Lock()
	c, ok := s.fps[fp]
	s.mu.Unlock()
	if ok && c.roots == roots {
		return nil
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return fmt.Errorf("%w: %w", mesh.ErrBadSignature, err)
	}
	sc, err := s.check(cert, fp, roots)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.fps[fp]; ok {
		s.fps[fp] = sc
		for i, c := range s.certs[sc.name] {
			if c.fp == fp {
				s.certs[sc.name][i] = sc
			}
		}
		return nil
	}
	cs := s.certs[sc.name]
	if cs == nil && len(s.certs) >= MaxSignerNames {
		return fmt.Errorf("%w: over %d signers known", mesh.ErrBadSignature, MaxSignerNames)
	}
	cs = append(cs, sc)
	// Newest first; keep certsPerName.
	for i := len(cs) - 1; i > 0 && cs[i].cert.NotBefore.After(cs[i-1].cert.NotBefore); i-- {
		cs[i], cs[i-1] = cs[i-1], cs[i]
	}
	for _, old := range cs[min(len(cs), certsPerName):] {
		delete(s.fps, old.fp)
	}
	s.certs[sc.name] = cs[:min(len(cs), certsPerName)]
	s.fps[fp] = sc
	return nil
}

// check verifies a certificate against roots at the clock's time.
func (s *Signer) check(cert *x509.Certificate, fp fingerprint, roots *trust.Roots) (*signerCert, error) {
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots.Pool(), CurrentTime: s.clock.Now(),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return nil, fmt.Errorf("%w: certificate serial %s: %w", mesh.ErrBadSignature, trust.SerialString(cert), err)
	}
	id, err := trust.CertIdentity(cert)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", mesh.ErrBadSignature, err)
	}
	if s.revs.IsRevoked(id.Serial) {
		return nil, fmt.Errorf("%w: %s", errSignerRevoked, id)
	}
	return &signerCert{fp: fp, cert: cert, name: id.Name, serial: id.Serial, roots: roots}, nil
}

// Verify checks sig over msg against origin's certificate that sig names:
// known, of origin's name, valid now, not revoked, and the signature good.
func (s *Signer) Verify(origin string, msg, sig []byte) error {
	if len(sig) < 1+len(fingerprint{}) || sig[0] != sigFormat {
		return fmt.Errorf("%w: malformed signature", mesh.ErrBadSignature)
	}
	fp := fingerprint(sig[1 : 1+len(fingerprint{})])
	raw := sig[1+len(fp):]
	s.mu.Lock()
	c, ok := s.fps[fp]
	s.mu.Unlock()
	if !ok {
		if s.OnUnknown != nil {
			s.OnUnknown(origin)
		}
		return fmt.Errorf("%w: %q's certificate %x", mesh.ErrUnknownSigner, origin, fp[:6])
	}
	if c.name != origin {
		return fmt.Errorf("%w: signed by node %q's certificate, claims to come from %q", mesh.ErrBadSignature, c.name, origin)
	}
	if s.revs.IsRevoked(c.serial) {
		return fmt.Errorf("%w: node %q, serial %s", errSignerRevoked, c.name, c.serial)
	}
	if now := s.clock.Now(); now.Before(c.cert.NotBefore) || !now.Before(c.cert.NotAfter) {
		return fmt.Errorf("%w: node %q, serial %s", errSignerExpired, c.name, c.serial)
	}
	if roots := s.holder.Roots(); c.roots != roots {
		// The CA set changed (a rotation): check the chain again.
		nc, err := s.check(c.cert, fp, roots)
		if err != nil {
			s.forget(fp)
			return err
		}
		s.mu.Lock()
		if _, ok := s.fps[fp]; ok {
			s.fps[fp] = nc
		}
		s.mu.Unlock()
		c = nc
	}
	if !verifySig(c.cert.PublicKey, msg, raw) {
		return fmt.Errorf("%w: node %q's signature does not match", mesh.ErrBadSignature, origin)
	}
	return nil
}

func verifySig(pub crypto.PublicKey, msg, sig []byte) bool {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		sum := sha256.Sum256(msg)
		return ecdsa.VerifyASN1(k, sum[:], sig)
	case ed25519.PublicKey:
		return ed25519.Verify(k, msg, sig)
	}
	return false
}

// LearnPeer keeps the certificate a verified TLS handshake with a peer
// presented (a presence pull), so that its deltas check at once after a
// renewal rather than after the next push/pull.
func (s *Signer) LearnPeer(cert *x509.Certificate) {
	if cert != nil {
		_ = s.learnCert(cert.Raw)
	}
}

func (s *Signer) forget(fp fingerprint) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.fps[fp]
	if !ok {
		return
	}
	delete(s.fps, fp)
	cs := s.certs[c.name][:0]
	for _, x := range s.certs[c.name] {
		if x.fp != fp {
			cs = append(cs, x)
		}
	}
	if len(cs) == 0 {
		delete(s.certs, c.name)
	} else {
		s.certs[c.name] = cs
	}
}

// Prune forgets revoked and expired certificates and returns the names
// whose every known certificate was revoked (their gossip is dropped).
func (s *Signer) Prune() (revoked []string) {
	now := s.clock.Now()
	s.mu.Lock()
	var drop []fingerprint
	for name, cs := range s.certs {
		all := true
		for _, c := range cs {
			r := s.revs.IsRevoked(c.serial)
			if r || !now.Before(c.cert.NotAfter) {
				drop = append(drop, c.fp)
			}
			all = all && r
		}
		if all {
			revoked = append(revoked, name)
		}
	}
	s.mu.Unlock()
	for _, fp := range drop {
		s.forget(fp)
	}
	return revoked
}

// Known reports whether a certificate of name is known (tests).
func (s *Signer) Known(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.certs[name]) > 0
}
