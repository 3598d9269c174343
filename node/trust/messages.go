package trust

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Message size bounds. A request comes from an unauthenticated peer, so
// its decoder refuses anything larger before parsing.
const (
	MaxJoinRequest  = 16 << 10
	MaxRenewRequest = 16 << 10
	MaxJoinResponse = 1 << 20
	// MaxKeyring bounds the opaque gossip keyring blob in a response.
	MaxKeyring = 64 << 10
)

// messageVersion is the join protocol version.
const messageVersion = 1

// JoinRequest is what a joining node sends: its token's id and secret
// (the CA fingerprint stays with the joiner: it already did its work in the
// handshake), the name it wants, and a CSR for its key.
type JoinRequest struct {
	Version int    `json:"v"`
	TokenID string `json:"token_id"`
	Secret  string `json:"secret"`
	Name    string `json:"name"`
	CSR     []byte `json:"csr"` // DER
	// Server: the joiner starts with --server. A server token gives the
	// server role and the CA only to such a joiner; to any other it gives
	// a node certificate.
	Server bool `json:"server,omitempty"`
}

// RenewRequest is what a member sends to renew: a CSR for a new key. The
// name and role come from the certificate it presents, not from here.
type RenewRequest struct {
	Version int    `json:"v"`
	CSR     []byte `json:"csr"` // DER
}

// JoinResponse is a server's answer to a join or a renewal.
type JoinResponse struct {
	Version int      `json:"v"`
	Name    string   `json:"name"`
	Role    Role     `json:"role"`
	Cert    []byte   `json:"cert"`  // DER, signed by Roots[0]
	Roots   [][]byte `json:"roots"` // DER, current CA first
	// Keyring is the gossip keyring, opaque to this package (join only).
	Keyring []byte `json:"keyring,omitempty"`
	// CA is the current CA's certificate and key, PEM, for a server that
	// joins with a server token (join only).
	CA []byte `json:"ca,omitempty"`
}

// decodeStrict decodes one JSON object of at most max bytes, refusing
// unknown fields and trailing data.
func decodeStrict(b []byte, max int, v any) error {
	if len(b) > max {
		return fmt.Errorf("%w: %d bytes (at most %d)", ErrTooLarge, len(b), max)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %w", ErrBadMessage, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: trailing data", ErrBadMessage)
	}
	return nil
}

// EncodeJoinRequest encodes a request.
func EncodeJoinRequest(r *JoinRequest) ([]byte, error) {
	r.Version = messageVersion
	return json.Marshal(r)
}

// DecodeJoinRequest decodes and validates a request from an
// unauthenticated peer: size-bounded, strict, the token id and secret well
// formed, the name valid, the CSR parsed with its signature checked.
func DecodeJoinRequest(b []byte) (*JoinRequest, *x509.CertificateRequest, error) {
	var r JoinRequest
	if err := decodeStrict(b, MaxJoinRequest, &r); err != nil {
		return nil, nil, err
	}
	if r.Version != messageVersion {
		return nil, nil, fmt.Errorf("%w: version %d (want %d; upgrade harn on both sides)", ErrBadMessage, r.Version, messageVersion)
	}
	if !validTokenID(r.TokenID) || !validTokenSecret(r.Secret) {
		return nil, nil, fmt.Errorf("%w: malformed token id or secret", ErrBadToken)
	}
	if err := ValidName(r.Name); err != nil {
		return nil, nil, err
	}
	csr, err := ParseCSR(r.CSR)
	if err != nil {
		return nil, nil, err
	}
	return &r, csr, nil
}

// EncodeRenewRequest encodes a renewal request.
func EncodeRenewRequest(r *RenewRequest) ([]byte, error) {
	r.Version = messageVersion
	return json.Marshal(r)
}

// DecodeRenewRequest decodes and validates a renewal request.
func DecodeRenewRequest(b []byte) (*x509.CertificateRequest, error) {
	var r RenewRequest
	if err := decodeStrict(b, MaxRenewRequest, &r); err != nil {
		return nil, err
	}
	if r.Version != messageVersion {
		return nil, fmt.Errorf("%w: version %d (want %d)", ErrBadMessage, r.Version, messageVersion)
	}
	return ParseCSR(r.CSR)
}

// EncodeJoinResponse encodes a response.
func EncodeJoinResponse(r *JoinResponse) ([]byte, error) {
	r.Version = messageVersion
	return json.Marshal(r)
}

// ParsedResponse is a decoded, checked JoinResponse.
type ParsedResponse struct {
	Identity Identity
	Cert     *x509.Certificate
	Roots    *Roots
	Keyring  []byte
	CA       *CA // servers only
}

// DecodeJoinResponse decodes a server's answer and checks it: the
// certificate parses, carries a valid identity and chains to the returned
// roots at now; the roots are CAs; a CA handed over is one of the roots.
// The caller still checks the key and the name against what it asked for.
func DecodeJoinResponse(b []byte, now time.Time) (*ParsedResponse, error) {
	var r JoinResponse
	if err := decodeStrict(b, MaxJoinResponse, &r); err != nil {
		return nil, err
	}
	if r.Version != messageVersion {
		return nil, fmt.Errorf("%w: version %d (want %d)", ErrBadMessage, r.Version, messageVersion)
	}
	if len(r.Keyring) > MaxKeyring {
		return nil, fmt.Errorf("%w: keyring of %d bytes", ErrTooLarge, len(r.Keyring))
	}
	cert, err := x509.ParseCertificate(r.Cert)
	if err != nil {
		return nil, fmt.Errorf("%w: certificate: %w", ErrBadMessage, err)
	}
	id, err := CertIdentity(cert)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadMessage, err)
	}
	if id.Name != r.Name || id.Role != r.Role {
		return nil, fmt.Errorf("%w: certificate says %s, response says %q/%s", ErrBadMessage, id, clipName(r.Name), clipName(string(r.Role)))
	}
	if len(r.Roots) == 0 || len(r.Roots) > maxRoots {
		return nil, fmt.Errorf("%w: %d CA certificates", ErrBadMessage, len(r.Roots))
	}
	var rc []*x509.Certificate
	for _, der := range r.Roots {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("%w: CA certificate: %w", ErrBadMessage, err)
		}
		rc = append(rc, c)
	}
	roots, err := rootsFrom(rc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadMessage, err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots.Pool(), CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth}}); err != nil {
		return nil, fmt.Errorf("%w: the certificate does not verify against the returned roots: %w", ErrBadMessage, err)
	}
	out := &ParsedResponse{Identity: id, Cert: cert, Roots: roots, Keyring: r.Keyring}
	if len(r.CA) > 0 {
		ca, err := ParseCAPEM(r.CA)
		if err != nil {
			return nil, fmt.Errorf("%w: CA: %w", ErrBadMessage, err)
		}
		if !roots.Contains(ca.Fingerprint()) {
			return nil, fmt.Errorf("%w: the CA handed over is not among the roots", ErrBadMessage)
		}
		out.CA = ca
	}
	return out, nil
}
