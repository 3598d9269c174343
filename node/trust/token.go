package trust

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// A join token is one string:
//
//	harn1.<id>.<secret>.<ca>.<check>
//
// id is 5 random bytes and secret 20 random bytes, both in lowercase
// base32 without padding (8 and 32 characters); ca is the 64 hex digits of
// the CA's SHA-256 fingerprint; check is the first 4 bytes (8 hex digits)
// of the SHA-256 of everything before the last dot, so that a mistyped or
// truncated token is caught before it is sent anywhere.
const tokenPrefix = "harn1"

const (
	tokenIDBytes     = 5
	tokenSecretBytes = 20
	maxTokenLen      = 256
	// DefaultTokenTTL is a join token's default lifetime.
	DefaultTokenTTL = 24 * time.Hour
)

var b32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// Token is a parsed join token.
type Token struct {
	ID     string // 8 base32 characters
	Secret string // 32 base32 characters
	CA     Fingerprint
}

// String renders the token as harn1.<id>.<secret>.<ca>.<check>.
func (t Token) String() string {
	body := tokenPrefix + "." + t.ID + "." + t.Secret + "." + t.CA.Hex()
	return body + "." + tokenCheck(body)
}

// Redacted renders the token with its secret hidden, for logs.
func (t Token) Redacted() string { return tokenPrefix + "." + t.ID + ".<secret>." + t.CA.Hex() }

func tokenCheck(body string) string {
	s := sha256.Sum256([]byte(body))
	return hex.EncodeToString(s[:4])
}

// ParseToken reads a join token. Surrounding space is ignored and letters
// may be upper case (a token read aloud or retyped).
func ParseToken(s string) (Token, error) {
	if len(s) > maxTokenLen {
		return Token{}, fmt.Errorf("%w: %d characters (a token has about 120)", ErrBadToken, len(s))
	}
	s = strings.ToLower(strings.TrimSpace(s))
	parts := strings.Split(s, ".")
	if len(parts) != 5 || parts[0] != tokenPrefix {
		return Token{}, fmt.Errorf("%w: want harn1.<id>.<secret>.<ca>.<check> (copy the whole token from harn token create)", ErrBadToken)
	}
	body := s[:strings.LastIndexByte(s, '.')]
	if subtle.ConstantTimeCompare([]byte(tokenCheck(body)), []byte(parts[4])) != 1 {
		return Token{}, fmt.Errorf("%w: checksum does not match (the token is mistyped or cut short)", ErrBadToken)
	}
	if err := checkB32(parts[1], tokenIDBytes); err != nil {
		return Token{}, fmt.Errorf("%w: id: %w", ErrBadToken, err)
	}
	if err := checkB32(parts[2], tokenSecretBytes); err != nil {
		return Token{}, fmt.Errorf("%w: secret: %w", ErrBadToken, err)
	}
	fp, err := ParseFingerprint(parts[3])
	if err != nil {
		return Token{}, err
	}
	return Token{ID: parts[1], Secret: parts[2], CA: fp}, nil
}

// checkB32 checks that s is the canonical base32 of n bytes.
func checkB32(s string, n int) error {
	if len(s) != b32.EncodedLen(n) {
		return fmt.Errorf("%d characters (want %d)", len(s), b32.EncodedLen(n))
	}
	b, err := b32.DecodeString(s)
	if err != nil || len(b) != n || b32.EncodeToString(b) != s {
		return fmt.Errorf("not base32")
	}
	return nil
}

// validTokenID checks an id's form (used by the request decoder).
func validTokenID(id string) bool { return checkB32(id, tokenIDBytes) == nil }

// validTokenSecret checks a secret's form.
func validTokenSecret(s string) bool { return checkB32(s, tokenSecretBytes) == nil }

// TokenOptions are `harn token create [--server] [--ttl 24h] [--uses N]`.
type TokenOptions struct {
	// Role is the role a node that joins with the token gets.
	Role Role
	// TTL is how long the token may be redeemed; 0 means DefaultTokenTTL.
	TTL time.Duration
	// Uses is how many joins the token allows; 0 means any number within
	// the TTL.
	Uses int
}

// TokenRecord is what a token store keeps about a token: the secret only
// as its SHA-256 (the secret has 160 random bits, so a fast hash is
// enough).
type TokenRecord struct {
	ID         string    `json:"id"`
	SecretHash string    `json:"secret_sha256"` // hex
	Role       Role      `json:"role"`
	Created    time.Time `json:"created"`
	Expires    time.Time `json:"expires"`
	Uses       int       `json:"uses,omitempty"` // 0: unlimited
	Used       int       `json:"used"`
}

// NewToken makes a token for the CA fp, and the record a store keeps.
func NewToken(fp Fingerprint, opts TokenOptions, now time.Time) (Token, TokenRecord, error) {
	if opts.Role == "" {
		opts.Role = RoleNode
	}
	if _, err := ParseRole(string(opts.Role)); err != nil {
		return Token{}, TokenRecord{}, err
	}
	if opts.TTL < 0 || opts.Uses < 0 {
		return Token{}, TokenRecord{}, fmt.Errorf("%w: TTL and uses must not be negative", ErrBadToken)
	}
	if opts.TTL == 0 {
		opts.TTL = DefaultTokenTTL
	}
	var raw [tokenIDBytes + tokenSecretBytes]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return Token{}, TokenRecord{}, fmt.Errorf("trust: token: %w", err)
	}
	t := Token{ID: b32.EncodeToString(raw[:tokenIDBytes]), Secret: b32.EncodeToString(raw[tokenIDBytes:]), CA: fp}
	rec := TokenRecord{ID: t.ID, SecretHash: hashSecret(t.Secret), Role: opts.Role,
		Created: now.UTC(), Expires: now.Add(opts.TTL).UTC(), Uses: opts.Uses}
	return t, rec, nil
}

func hashSecret(secret string) string {
	s := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(s[:])
}

// Check decides whether the record may be redeemed with secret at now. It
// is pure, so a registry-backed store runs the same rule in its state
// machine. The secret is compared in constant time, and before anything
// else is revealed about the token.
func (r *TokenRecord) Check(secret string, now time.Time) error {
	if subtle.ConstantTimeCompare([]byte(hashSecret(secret)), []byte(r.SecretHash)) != 1 {
		return fmt.Errorf("%w (token %s)", ErrTokenSecret, r.ID)
	}
	if !now.Before(r.Expires) {
		return fmt.Errorf("%w (token %s expired %s)", ErrTokenExpired, r.ID, r.Expires.Format(time.RFC3339))
	}
	if r.Uses > 0 && r.Used >= r.Uses {
		return fmt.Errorf("%w (token %s was used %d times)", ErrTokenUsedUp, r.ID, r.Used)
	}
	return nil
}

// TokenStore keeps join tokens. Redeem is the one operation that must be
// atomic: check and count a use together. The node starts with the file
// store below and can swap in a registry-backed one.
type TokenStore interface {
	// Create stores a new record (its id must be new).
	Create(rec TokenRecord) error
	// Redeem checks id and secret at now, counts one use and returns the
	// role the token grants. Errors wrap ErrTokenUnknown, ErrTokenSecret,
	// ErrTokenExpired or ErrTokenUsedUp.
	Redeem(id, secret string, now time.Time) (Role, error)
	// Revoke deletes a token; ErrTokenUnknown when there is none.
	Revoke(id string) error
	// List returns the records (secrets only as hashes), oldest first.
	List() ([]TokenRecord, error)
}

// CreateToken makes a token for the CA fp and stores its record.
func CreateToken(store TokenStore, fp Fingerprint, opts TokenOptions, now time.Time) (Token, error) {
	t, rec, err := NewToken(fp, opts, now)
	if err != nil {
		return Token{}, err
	}
	if err := store.Create(rec); err != nil {
		return Token{}, err
	}
	return t, nil
}
