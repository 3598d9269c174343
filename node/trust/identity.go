package trust

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Role is what a certificate allows its holder to be in the mesh.
type Role string

// Roles.
const (
	// RoleServer is a raft voter: it may send raft traffic, sign
	// certificates and make housekeeping registry writes.
	RoleServer Role = "server"
	// RoleNode is every other member: a non-voting replica.
	RoleNode Role = "node"
)

// ParseRole accepts "server" or "node".
func ParseRole(s string) (Role, error) {
	switch Role(s) {
	case RoleServer, RoleNode:
		return Role(s), nil
	}
	return "", fmt.Errorf("%w: %q (want server or node)", ErrBadRole, s)
}

// MaxNameLen bounds a node name.
const MaxNameLen = 64

// ValidName checks a node name: 1 to 64 characters of [A-Za-z0-9._-],
// starting with a letter or digit. Such a name needs no escaping in a URI,
// a log line or a terminal.
func ValidName(name string) error {
	if name == "" || len(name) > MaxNameLen {
		return fmt.Errorf("%w: length %d (want 1 to %d characters)", ErrBadName, len(name), MaxNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			i > 0 && (c == '.' || c == '-' || c == '_')
		if !ok {
			return fmt.Errorf("%w: %q (use letters, digits, '.', '-' and '_', starting with a letter or digit)", ErrBadName, clipName(name))
		}
	}
	return nil
}

// clipName renders a rejected name safely: printable ASCII only, clipped.
func clipName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() < MaxNameLen; i++ {
		if c := s[i]; c >= 0x20 && c < 0x7f {
			b.WriteByte(c)
		} else {
			b.WriteByte('?')
		}
	}
	return b.String()
}

// Identity is who a mesh certificate says its holder is.
type Identity struct {
	Name   string
	Role   Role
	Serial string // the certificate's serial number, lowercase hex
}

// String names the certificate: `node "laptop" (role node, cert serial 1f…)`.
func (id Identity) String() string {
	if id.Name == "" {
		return "an anonymous peer (no certificate)"
	}
	return fmt.Sprintf("node %q (role %s, cert serial %s)", id.Name, id.Role, id.Serial)
}

// identityScheme and identityHost make the URI SAN that carries the
// identity: harn://mesh/<role>/<name>.
const (
	identityScheme = "harn"
	identityHost   = "mesh"
)

// IdentityURI is the URI SAN for a node: harn://mesh/<role>/<name>.
func IdentityURI(name string, role Role) *url.URL {
	return &url.URL{Scheme: identityScheme, Host: identityHost, Path: "/" + string(role) + "/" + name}
}

// SerialString renders a certificate's serial as Identity.Serial does.
func SerialString(c *x509.Certificate) string { return c.SerialNumber.Text(16) }

// CertIdentity reads the identity a certificate carries. It checks the
// form only, not the signature: call it on certificates that a handshake
// with this package's configurations has verified.
func CertIdentity(c *x509.Certificate) (Identity, error) {
	if c == nil {
		return Identity{}, ErrNoPeerCert
	}
	var found *Identity
	for _, u := range c.URIs {
		if u.Scheme != identityScheme {
			continue
		}
		if found != nil {
			return Identity{}, fmt.Errorf("%w: more than one harn:// URI", ErrNoIdentity)
		}
		if u.Host != identityHost || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.RawPath != "" {
			return Identity{}, fmt.Errorf("%w: malformed harn:// URI", ErrNoIdentity)
		}
		parts := strings.Split(strings.TrimPrefix(u.Path, "/"), "/")
		if len(parts) != 2 || !strings.HasPrefix(u.Path, "/") {
			return Identity{}, fmt.Errorf("%w: malformed harn:// URI", ErrNoIdentity)
		}
		role, err := ParseRole(parts[0])
		if err != nil {
			return Identity{}, fmt.Errorf("%w: %w", ErrNoIdentity, err)
		}
		if err := ValidName(parts[1]); err != nil {
			return Identity{}, fmt.Errorf("%w: %w", ErrNoIdentity, err)
		}
		found = &Identity{Name: parts[1], Role: role, Serial: SerialString(c)}
	}
	if found == nil {
		return Identity{}, ErrNoIdentity
	}
	return *found, nil
}

// PeerIdentity reads the identity of the peer of a connection whose
// handshake used one of this package's configurations (which verified the
// chain). ErrNoPeerCert when the peer presented none.
func PeerIdentity(cs tls.ConnectionState) (Identity, error) {
	if len(cs.PeerCertificates) == 0 {
		return Identity{}, ErrNoPeerCert
	}
	return CertIdentity(cs.PeerCertificates[0])
}

// NewKey makes a node's private key (ECDSA P-256).
func NewKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

// NewCSR makes a certificate request for name and role, signed with key.
// The signer decides the final name and role (from the token), not the
// request; the request proves possession of the key.
func NewCSR(key crypto.Signer, name string, role Role) ([]byte, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	if _, err := ParseRole(string(role)); err != nil {
		return nil, err
	}
	tmpl := &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: name},
		URIs:    []*url.URL{IdentityURI(name, role)},
	}
	return x509.CreateCertificateRequest(rand.Reader, tmpl, key)
}

// ParseCSR parses a DER certificate request, checks its signature and
// allows only ECDSA P-256/P-384 and Ed25519 keys.
func ParseCSR(der []byte) (*x509.CertificateRequest, error) {
	csr, err := x509.ParseCertificateRequest(der)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadCSR, err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("%w: signature: %w", ErrBadCSR, err)
	}
	switch k := csr.PublicKey.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() && k.Curve != elliptic.P384() {
			return nil, fmt.Errorf("%w: ECDSA curve %s (want P-256 or P-384)", ErrBadCSR, k.Curve.Params().Name)
		}
	case ed25519.PublicKey:
	default:
		return nil, fmt.Errorf("%w: key type %T (want ECDSA P-256 or Ed25519)", ErrBadCSR, csr.PublicKey)
	}
	return csr, nil
}

// DefaultCertTTL is a node certificate's default lifetime.
const DefaultCertTTL = 30 * 24 * time.Hour

// NeedsRenewal reports whether a certificate should be renewed at now:
// after two thirds of its lifetime have passed (or when it is not valid at
// now at all).
func NeedsRenewal(c *x509.Certificate, now time.Time) bool {
	if c == nil || now.Before(c.NotBefore) || !now.Before(c.NotAfter) {
		return true
	}
	life := c.NotAfter.Sub(c.NotBefore)
	return !now.Before(c.NotBefore.Add(life / 3 * 2))
}
