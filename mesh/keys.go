package mesh

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
)

// KeySize is the size of the gossip key harn generates and accepts in text
// form (AES-256-GCM).
const KeySize = 32

// GenerateKey returns a new random 32-byte gossip key.
func GenerateKey() ([]byte, error) {
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("mesh: generate key: %w", err)
	}
	return k, nil
}

// EncodeKey renders a key as standard base64, the form used in flags,
// environment variables and config files.
func EncodeKey(k []byte) string { return base64.StdEncoding.EncodeToString(k) }

// DecodeKey parses a base64 key of 32 bytes. Its error wraps ErrConfig and
// says how to make a good one.
func DecodeKey(s string) ([]byte, error) {
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("%w: the gossip key is not valid base64 (%v); "+
			"generate one with `openssl rand -base64 32`", ErrConfig, err)
	}
	if len(k) != KeySize {
		return nil, fmt.Errorf("%w: the gossip key is %d bytes, want %d; "+
			"generate one with `openssl rand -base64 32`", ErrConfig, len(k), KeySize)
	}
	return k, nil
}
