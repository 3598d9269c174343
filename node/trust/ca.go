package trust

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/url"
	"strings"
	"time"
)

// DefaultCATTL is the mesh CA's lifetime.
const DefaultCATTL = 10 * 365 * 24 * time.Hour

// backdate is subtracted from every NotBefore, so that a peer whose clock
// is a little behind accepts a fresh certificate.
const backdate = time.Minute

// Fingerprint is the SHA-256 of a CA certificate's DER.
type Fingerprint [sha256.Size]byte

// FingerprintOf hashes a certificate's DER.
func FingerprintOf(c *x509.Certificate) Fingerprint { return sha256.Sum256(c.Raw) }

// String is the kubeadm form: "sha256:<64 hex digits>".
func (f Fingerprint) String() string { return "sha256:" + f.Hex() }

// Hex is the 64 lowercase hex digits.
func (f Fingerprint) Hex() string { return hex.EncodeToString(f[:]) }

// Equal compares in constant time.
func (f Fingerprint) Equal(g Fingerprint) bool { return subtle.ConstantTimeCompare(f[:], g[:]) == 1 }

// ParseFingerprint accepts "sha256:<hex>" or bare hex (64 digits, any case).
func ParseFingerprint(s string) (Fingerprint, error) {
	var f Fingerprint
	h := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(s), "sha256:"))
	if len(h) != 2*len(f) {
		return f, fmt.Errorf("%w: fingerprint has %d hex digits (want 64)", ErrBadToken, len(h))
	}
	if _, err := hex.Decode(f[:], []byte(h)); err != nil {
		return f, fmt.Errorf("%w: fingerprint: %w", ErrBadToken, err)
	}
	return f, nil
}

// CA is a mesh certificate authority: its self-signed certificate and key.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// NewCA makes a self-signed mesh CA valid from now for ttl (DefaultCATTL
// when 0), with an ECDSA P-256 key.
func NewCA(now time.Time, ttl time.Duration) (*CA, error) {
	if ttl <= 0 {
		ttl = DefaultCATTL
	}
	key, err := NewKey()
	if err != nil {
		return nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "harn mesh CA " + now.UTC().Format("2006-01-02T15:04:05Z"), Organization: []string{"harn"}},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(ttl),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("trust: create CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("trust: create CA: %w", err)
	}
	return &CA{Cert: cert, Key: key}, nil
}

// Fingerprint is the SHA-256 of the CA certificate's DER.
func (ca *CA) Fingerprint() Fingerprint { return FingerprintOf(ca.Cert) }

// Sign issues a certificate for name and role to the key in csr, valid from
// now for ttl (DefaultCertTTL when 0), and never past the CA's own end. The
// request's names are ignored: the identity is the one given here.
func (ca *CA) Sign(csr *x509.CertificateRequest, name string, role Role, ttl time.Duration, now time.Time) (*x509.Certificate, error) {
	if csr == nil {
		return nil, fmt.Errorf("%w: nil request", ErrBadCSR)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("%w: signature: %w", ErrBadCSR, err)
	}
	return ca.Issue(csr.PublicKey, name, role, ttl, now)
}

// Issue makes a certificate for pub with name and role (Sign without a
// request; a server uses it for its own certificate).
func (ca *CA) Issue(pub crypto.PublicKey, name string, role Role, ttl time.Duration, now time.Time) (*x509.Certificate, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	if _, err := ParseRole(string(role)); err != nil {
		return nil, err
	}
	if ttl <= 0 {
		ttl = DefaultCertTTL
	}
	end := now.Add(ttl)
	if end.After(ca.Cert.NotAfter) {
		end = ca.Cert.NotAfter
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name, Organization: []string{"harn mesh " + string(role)}},
		NotBefore:             now.Add(-backdate),
		NotAfter:              end,
		URIs:                  []*url.URL{IdentityURI(name, role)},
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, pub, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("trust: sign certificate for %s: %w", name, err)
	}
	return x509.ParseCertificate(der)
}

// newSerial is a random positive 127-bit serial.
func newSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("trust: serial: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}

// Roots is the set of trusted mesh CA certificates: the current CA first,
// then, during a rotation, the previous one. Both are trusted; no
// cross-signing is needed. A Roots is immutable.
type Roots struct {
	certs []*x509.Certificate
	pool  *x509.CertPool
}

// NewRoots builds a Roots from CA certificates (duplicates dropped, order
// kept).
func NewRoots(certs ...*x509.Certificate) *Roots {
	r := &Roots{pool: x509.NewCertPool()}
	seen := map[Fingerprint]bool{}
	for _, c := range certs {
		if c == nil || seen[FingerprintOf(c)] {
			continue
		}
		seen[FingerprintOf(c)] = true
		r.certs = append(r.certs, c)
		r.pool.AddCert(c)
	}
	return r
}

// Certs returns the CA certificates, current first.
func (r *Roots) Certs() []*x509.Certificate {
	if r == nil {
		return nil
	}
	return append([]*x509.Certificate(nil), r.certs...)
}

// Pool is the roots as an x509 pool (do not modify it).
func (r *Roots) Pool() *x509.CertPool {
	if r == nil {
		return x509.NewCertPool()
	}
	return r.pool
}

// Contains reports whether a CA with fingerprint fp is trusted.
func (r *Roots) Contains(fp Fingerprint) bool {
	if r == nil {
		return false
	}
	for _, c := range r.certs {
		if FingerprintOf(c).Equal(fp) {
			return true
		}
	}
	return false
}

// Fingerprints lists the trusted CAs' fingerprints, current first.
func (r *Roots) Fingerprints() []Fingerprint {
	var out []Fingerprint
	for _, c := range r.Certs() {
		out = append(out, FingerprintOf(c))
	}
	return out
}

// PEM encodes the roots, current first.
func (r *Roots) PEM() []byte {
	var b bytes.Buffer
	for _, c := range r.Certs() {
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return b.Bytes()
}

// maxRoots bounds a trust bundle read from outside.
const maxRoots = 4

// ParseRoots reads a PEM bundle of CA certificates. Every certificate must
// be a CA; at least one is needed.
func ParseRoots(b []byte) (*Roots, error) {
	certs, err := parseCerts(b)
	if err != nil {
		return nil, err
	}
	return rootsFrom(certs)
}

func rootsFrom(certs []*x509.Certificate) (*Roots, error) {
	if len(certs) == 0 {
		return nil, fmt.Errorf("%w: no CA certificate", ErrBadPEM)
	}
	if len(certs) > maxRoots {
		return nil, fmt.Errorf("%w: %d CA certificates (at most %d)", ErrBadPEM, len(certs), maxRoots)
	}
	for _, c := range certs {
		if !c.IsCA || !c.BasicConstraintsValid {
			return nil, fmt.Errorf("%w: certificate %q is not a CA", ErrBadPEM, clipName(c.Subject.CommonName))
		}
	}
	return NewRoots(certs...), nil
}

// parseCerts reads every CERTIFICATE block of a PEM text; any other block
// is an error.
func parseCerts(b []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("%w: unexpected %q block", ErrBadPEM, clipName(blk.Type))
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadPEM, err)
		}
		out = append(out, c)
	}
	if len(bytes.TrimSpace(b)) != 0 {
		return nil, fmt.Errorf("%w: trailing data after the last PEM block", ErrBadPEM)
	}
	return out, nil
}

// certPEM encodes one certificate.
func certPEM(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// keyPEM encodes a private key as PKCS #8.
func keyPEM(k crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("trust: encode key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// parseCertKey reads a PEM text holding certificates and exactly one
// PKCS #8 private key that matches the first certificate.
func parseCertKey(b []byte) ([]*x509.Certificate, crypto.Signer, error) {
	var certs []*x509.Certificate
	var key crypto.Signer
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		switch blk.Type {
		case "CERTIFICATE":
			c, err := x509.ParseCertificate(blk.Bytes)
			if err != nil {
				return nil, nil, fmt.Errorf("%w: %w", ErrBadPEM, err)
			}
			certs = append(certs, c)
		case "PRIVATE KEY":
			if key != nil {
				return nil, nil, fmt.Errorf("%w: more than one private key", ErrBadPEM)
			}
			k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
			if err != nil {
				return nil, nil, fmt.Errorf("%w: %w", ErrBadPEM, err)
			}
			s, ok := k.(crypto.Signer)
			if !ok {
				return nil, nil, fmt.Errorf("%w: key type %T", ErrBadPEM, k)
			}
			key = s
		default:
			return nil, nil, fmt.Errorf("%w: unexpected %q block", ErrBadPEM, clipName(blk.Type))
		}
	}
	if len(certs) == 0 || key == nil {
		return nil, nil, fmt.Errorf("%w: want a certificate and its private key", ErrBadPEM)
	}
	if !publicKeysEqual(certs[0].PublicKey, key.Public()) {
		return nil, nil, fmt.Errorf("%w: the private key does not match the certificate", ErrBadPEM)
	}
	return certs, key, nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	e, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && e.Equal(b)
}
