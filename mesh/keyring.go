package mesh

import (
	"errors"
	"fmt"

	"github.com/hashicorp/memberlist"
)

// ErrNoKeyring: the mesh runs without gossip encryption, so it has no
// keyring to change (start it with a gossip key).
var ErrNoKeyring = errors.New("mesh: gossip is not encrypted; there is no keyring (start the node with a gossip key)")

// keyring builds the memberlist keyring: SecretKey primary, ExtraKeys
// accepted for decryption. Nil without a SecretKey.
func (c Config) keyring() (*memberlist.Keyring, error) {
	if len(c.SecretKey) == 0 {
		return nil, nil
	}
	kr, err := memberlist.NewKeyring(append([][]byte{c.SecretKey}, c.ExtraKeys...), c.SecretKey)
	if err != nil {
		return nil, fmt.Errorf("%w: keyring: %w", ErrConfig, err)
	}
	return kr, nil
}

// Keys returns the primary gossip key and every key accepted (the primary
// included); ErrNoKeyring without encryption.
func (m *Mesh) Keys() (primary []byte, all [][]byte, err error) {
	kr := m.kr.Load()
	if kr == nil {
		return nil, nil, ErrNoKeyring
	}
	return kr.GetPrimaryKey(), kr.GetKeys(), nil
}

// InstallKey adds a key that gossip is accepted with (rotation step 1).
func (m *Mesh) InstallKey(k []byte) error {
	kr := m.kr.Load()
	if kr == nil {
		return ErrNoKeyring
	}
	return kr.AddKey(k)
}

// UseKey makes an installed key the one gossip is sent with (step 2).
func (m *Mesh) UseKey(k []byte) error {
	kr := m.kr.Load()
	if kr == nil {
		return ErrNoKeyring
	}
	return kr.UseKey(k)
}

// RemoveKey forgets a key that is not the primary (step 3).
func (m *Mesh) RemoveKey(k []byte) error {
	kr := m.kr.Load()
	if kr == nil {
		return ErrNoKeyring
	}
	return kr.RemoveKey(k)
}
