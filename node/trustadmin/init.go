package trustadmin

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/node/meshtrust"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/util/clock"
)

// MeshInit is wire.MeshInit.
type MeshInit = wire.MeshInit

// InitMesh prepares the first server of a mesh, before its node starts:
// the CA, the gossip keyring and this server's certificate in the data
// dir's trust directory, and a join token for the next nodes (kept in the
// data dir until the node starts and moves it into the registry). Run
// again, it keeps what exists and makes one more token.
func InitMesh(dataDir, name string, opts TokenCreateArgs, clk clock.Clock) (MeshInit, error) {
	if err := trust.ValidName(name); err != nil {
		return MeshInit{}, fmt.Errorf("%w: --name: %w", layout.ErrConfig, err)
	}
	dir := layout.TrustDir(dataDir)
	if cert, err := trust.LoadNodeCert(dir); err == nil {
		id, err := trust.CertIdentity(cert.Leaf)
		if err != nil {
			return MeshInit{}, fmt.Errorf("%w: %w", meshtrust.ErrTrust, err)
		}
		if id.Name != name || id.Role != trust.RoleServer {
			return MeshInit{}, fmt.Errorf("%w: %s already holds the certificate of %s; mesh init runs on a fresh server", meshtrust.ErrTrust, dir, id)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return MeshInit{}, fmt.Errorf("%w: %w", meshtrust.ErrTrust, err)
	}
	a, created, err := meshtrust.InitTrustDir(dir, name, nil, clk)
	if err != nil {
		return MeshInit{}, err
	}
	tok, err := CreatePendingToken(dataDir, opts, clk)
	if err != nil {
		return MeshInit{}, err
	}
	return MeshInit{Created: created, Fingerprint: a.Fingerprint().String(), Name: name, Token: tok}, nil
}

// CreatePendingToken makes a join token on a server whose node is not
// running: its record waits in the data dir until the node starts and moves
// it into the registry (the node redeems it from there meanwhile).
func CreatePendingToken(dataDir string, opts TokenCreateArgs, clk clock.Clock) (TokenCreated, error) {
	a, err := trust.LoadAuthority(layout.TrustDir(dataDir), clk)
	if err != nil {
		return TokenCreated{}, fmt.Errorf("%w: %w", meshtrust.ErrTrust, err)
	}
	role := trust.RoleNode
	if opts.Server {
		role = trust.RoleServer
	}
	store, err := meshtrust.OpenPendingTokens(dataDir)
	if err != nil {
		return TokenCreated{}, fmt.Errorf("%w: %w", meshtrust.ErrTrust, err)
	}
	tok, rec, err := trust.NewToken(a.Fingerprint(), trust.TokenOptions{Role: role, TTL: opts.TTL, Uses: opts.Uses}, clk.Now())
	if err != nil {
		return TokenCreated{}, fmt.Errorf("%w: %w", layout.ErrConfig, err)
	}
	if err := store.Create(rec); err != nil {
		return TokenCreated{}, fmt.Errorf("%w: %w", meshtrust.ErrTrust, err)
	}
	if err := meshtrust.ShareCA(layout.TrustDir(dataDir)); err != nil {
		return TokenCreated{}, err
	}
	return TokenCreated{Token: tok.String(), ID: tok.ID, Role: string(role), Expires: rec.Expires, Uses: rec.Uses}, nil
}
