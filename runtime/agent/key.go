package agent

import (
	"fmt"
	"os"
	"strings"
)

// maxKeyBytes bounds a key file.
const maxKeyBytes = 4096

// ReadKeyFile reads a provider key from a file that only its owner may
// read (0600 or stricter), trimmed of surrounding white space.
func ReadKeyFile(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("%w: key file: %w", ErrNoKey, err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%w: key file %s is mode %o; make it 0600 (chmod 600 %s)", ErrBadConfig, path, st.Mode().Perm(), path)
	}
	if st.Size() > maxKeyBytes {
		return "", fmt.Errorf("%w: key file %s is over %d bytes", ErrBadConfig, path, maxKeyBytes)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%w: key file: %w", ErrNoKey, err)
	}
	return strings.TrimSpace(string(b)), nil
}
