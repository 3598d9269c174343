package meshtrust

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/util/clock"
)

// No plaintext mesh by default: a node with no certificate and no join
// token makes its own CA at its first start, as `harn mesh init` does, so
// that raft and the cluster gRPC are mutual TLS 1.3 from the start. The CA
// stays "lone" (a marker file in the trust directory) until this node
// makes a join token: until then no other node can hold a certificate of
// it, and a start with --join-token may replace it by the mesh's.

// ErrJoinNeedsToken: a node asked to --join a mesh has no certificate of
// it and no join token (and plaintext was not asked for).
var ErrJoinNeedsToken = fmt.Errorf("%w: --join needs this node to hold a certificate of the mesh; "+
	"pass --join-token (from `harn token create` on a server of the mesh), or --insecure-mesh for a plaintext mesh on a trusted network", ErrTrust)

// autoCAFile marks a CA this node made for itself and never shared.
const autoCAFile = "lone-ca"

// LoneCA reports whether the trust directory's CA was made at a first
// start and no join token was ever made from it.
func LoneCA(dir string) bool { return loneCA(dir) }

// ShareCA records that the trust directory's CA now signs for others.
func ShareCA(dir string) error { return shareCA(dir) }

// loneCA reports whether the trust directory's CA was made at a first
// start and no join token was ever made from it.
func loneCA(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, autoCAFile))
	return err == nil
}

// shareCA records that the trust directory's CA now signs for others (a
// join token was made): from then on it is the mesh's CA.
func shareCA(dir string) error {
	err := os.Remove(filepath.Join(dir, autoCAFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %w", ErrTrust, err)
	}
	return nil
}

// InitTrustDir makes what a mesh's first server holds, keeping what
// exists: the CA, the gossip keyring (gossipKey as its primary when given)
// and a server certificate for name.
func InitTrustDir(dir, name string, gossipKey []byte, clk clock.Clock) (*trust.Authority, bool, error) {
	a, created, err := trust.InitAuthority(dir, clk)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %w", ErrTrust, err)
	}
	if _, err := LoadKeyring(dir); errors.Is(err, fs.ErrNotExist) {
		k := gossipKey
		if k == nil {
			if k, err = mesh.GenerateKey(); err != nil {
				return nil, false, err
			}
		}
		if err := SaveKeyring(dir, &Keyring{Primary: k, Keys: [][]byte{k}}); err != nil {
			return nil, false, fmt.Errorf("%w: %w", ErrTrust, err)
		}
	} else if err != nil {
		return nil, false, fmt.Errorf("%w: %w", ErrTrust, err)
	}
	if _, err := trust.LoadNodeCert(dir); errors.Is(err, fs.ErrNotExist) {
		key, err := trust.NewKey()
		if err != nil {
			return nil, false, err
		}
		cert, err := a.CA().Issue(key.Public(), name, trust.RoleServer, 0, clk.Now())
		if err != nil {
			return nil, false, fmt.Errorf("%w: %w", ErrTrust, err)
		}
		if err := trust.SaveNodeCert(dir, cert, key); err != nil {
			return nil, false, fmt.Errorf("%w: %w", ErrTrust, err)
		}
	} else if err != nil {
		return nil, false, fmt.Errorf("%w: %w", ErrTrust, err)
	}
	return a, created, nil
}

// makeLoneCA makes this node's own CA at its first start. The marker is
// written first, so that a crash half-way leaves a CA still known as lone.
func (t *Trust) makeLoneCA() error {
	dir := t.dir
	if err := writePrivateFile(dir, autoCAFile, []byte("made at this node's first start; removed when a join token is made\n")); err != nil {
		return fmt.Errorf("%w: %w", ErrTrust, err)
	}
	a, _, err := InitTrustDir(dir, t.cfg.Name, t.cfg.GossipKey, t.clock)
	if err != nil {
		return err
	}
	t.log.Info("made this node's own mesh CA (mutual TLS on raft and the cluster gRPC); `harn token create` makes it the mesh's",
		"ca", a.Fingerprint().String(), "dir", dir)
	return nil
}

// dropLoneCA removes the lone CA's files once a join brought the mesh's:
// its key, its keyring and its pending tokens (the certificate and roots
// are overwritten by the join's), and the registry of the one-node mesh it
// led (<data>/raft: its configuration names this node as the only voter,
// and its records are the lone mesh's; the mesh's leader replicates the
// real registry, and the resync loop writes this node's sessions into it
// from the ledger, which stays). The marker goes last, in openTrust.
func dropLoneCA(dir string) error {
	for _, f := range []string{trust.FileCAKey, keyringFile, pendingTokensFile} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %w", ErrTrust, err)
		}
	}
	if err := os.RemoveAll(filepath.Join(filepath.Dir(dir), "raft")); err != nil {
		return fmt.Errorf("%w: remove the lone registry: %w", ErrTrust, err)
	}
	return nil
}
