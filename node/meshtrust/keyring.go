package meshtrust

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/trust"
)

// keyringFile holds the gossip keyring in the trust directory.
const keyringFile = "keyring.json"

// Keyring is the gossip keyring: the key gossip is sent with, and every key
// accepted. It is what the registry replicates and a join hands over.
type Keyring struct {
	Primary []byte   `json:"primary"`
	Keys    [][]byte `json:"keys"`
}

func (k *Keyring) validate() error {
	if len(k.Primary) != mesh.KeySize {
		return fmt.Errorf("%w: keyring primary key is %d bytes", ErrTrust, len(k.Primary))
	}
	found := false
	for _, x := range k.Keys {
		if len(x) != mesh.KeySize {
			return fmt.Errorf("%w: keyring key is %d bytes", ErrTrust, len(x))
		}
		found = found || string(x) == string(k.Primary)
	}
	if !found {
		return fmt.Errorf("%w: keyring primary key is not among its keys", ErrTrust)
	}
	return nil
}

// DecodeKeyring parses a keyring blob (the registry's, a join's).
func DecodeKeyring(b []byte) (*Keyring, error) {
	var k Keyring
	if err := json.Unmarshal(b, &k); err != nil {
		return nil, fmt.Errorf("%w: keyring: %w", ErrTrust, err)
	}
	if err := k.validate(); err != nil {
		return nil, err
	}
	return &k, nil
}

// LoadKeyring reads the keyring of a trust directory (fs.ErrNotExist when
// there is none).
func LoadKeyring(dir string) (*Keyring, error) {
	p := filepath.Join(dir, keyringFile)
	if err := trust.CheckSecretFile(p); err != nil {
		return nil, err
	}
	b, err := readFileBounded(p, 1<<20)
	if err != nil {
		return nil, err
	}
	return DecodeKeyring(b)
}

// SaveKeyring writes the keyring into a trust directory, 0600.
func SaveKeyring(dir string, k *Keyring) error {
	b, err := json.Marshal(k)
	if err != nil {
		return err
	}
	return writePrivateFile(dir, keyringFile, b)
}

// DisplayKey renders a gossip key for operators (base64; the registry and
// the local socket are both private).
func DisplayKey(k []byte) string { return mesh.EncodeKey(k) }

func readFileBounded(p string, max int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, 0, 4096)
	buf := make([]byte, 4096)
	for {
		n, err := f.Read(buf)
		b = append(b, buf[:n]...)
		if int64(len(b)) > max {
			return nil, fmt.Errorf("%s is larger than %d bytes", p, max)
		}
		if err != nil {
			break
		}
	}
	return b, nil
}
