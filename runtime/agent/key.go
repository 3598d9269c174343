package agent

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/harn-dev/harn/util/secretfile"
)

// maxKeyBytes bounds a key file.
const maxKeyBytes = 4096

// ReadKeyFile reads a provider key from a file that passes the checks of
// the node's own secret files (secretfile.Read): a regular file of this
// user, mode 0600 or stricter, not a symlink, at most 4 KiB; trimmed of
// surrounding white space. An insecure file is a
// *secretfile.InsecureFileError (ErrBadConfig too); a missing one
// ErrNoKey.
func ReadKeyFile(path string) (string, error) {
	k, err := secretfile.Read(path, maxKeyBytes)
	var ie *secretfile.InsecureFileError
	switch {
	case errors.As(err, &ie):
		return "", fmt.Errorf("%w: key file: %w", ErrBadConfig, err)
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%w: key file: %w", ErrNoKey, err)
	case err != nil:
		return "", fmt.Errorf("%w: key file: %w", ErrBadConfig, err)
	case k == "":
		return "", fmt.Errorf("%w: key file %s is empty", ErrNoKey, secretfile.ShellQuote(path))
	}
	return k, nil
}
