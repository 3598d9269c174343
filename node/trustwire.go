package node

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/util/clock"
)

// The node's mesh trust: its certificate, the CA on servers, the join and
// renewal service, revocations and the gossip keyring, all wired from the
// trust room (node/trust) to the registry, raft and the cluster gRPC.

// Trust errors. Every failure to start because of mesh trust wraps ErrTrust.
var (
	ErrTrust = errors.New("node: mesh trust")
	// ErrNotServer: a trust operation that needs the mesh CA ran on a node
	// that is not a server holding it.
	ErrNotServer = errors.New("node: this needs a mesh server that holds the CA (run it on a server)")
)

// Registry keys of the trust records (raftstore's key-value space).
const (
	kvTokenPrefix   = "trust/token/"
	kvIssuedPrefix  = "trust/issued/"
	kvRevokedPrefix = "trust/revoked/"
	kvKeyring       = "gossip/keyring"
	kvRoots         = "trust/roots"
	kvCA            = "trust/ca"
)

// keyringFile holds the gossip keyring in the trust directory.
const keyringFile = "keyring.json"

// pendingTokensFile holds tokens made while no node ran (harn mesh init,
// harn token create offline); a server moves them into the registry.
const pendingTokensFile = "tokens-pending.json"

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

// OpenPendingTokens opens the store of tokens made while no node ran.
func OpenPendingTokens(dataDir string) (*trust.FileTokenStore, error) {
	if err := trust.EnsurePrivateDir(TrustDir(dataDir)); err != nil {
		return nil, err
	}
	return trust.OpenFileTokenStore(filepath.Join(TrustDir(dataDir), pendingTokensFile))
}

// meshTrust is a cluster's trust state. Nil on a mesh without a CA.
type meshTrust struct {
	dir     string
	holder  *trust.Holder
	auth    atomic.Pointer[trust.Authority] // servers holding the CA; nil otherwise (a CA rotation swaps it)
	revs    *trust.RevocationList
	renewer *trust.Renewer
	join    *trust.JoinServer
	pending *trust.FileTokenStore

	mu          sync.Mutex
	keyringIdx  uint64 // registry index of the keyring last applied
	rootsIdx    uint64
	caIdx       uint64
	ownRecorded string // serial of this node's certificate known to be recorded
	ownRevoked  bool
	removed     map[string]bool // removedNames at the last sync
	renewing    bool            // a renewal started by renewSoon runs
	lastRenew   time.Time       // when renewSoon last started one
}

// authority is the server's CA, nil on other nodes.
func (t *meshTrust) authority() *trust.Authority { return t.auth.Load() }

// openTrust loads this node's certificate: joining the mesh with the join
// token when it has none (or holds only its own lone CA), making its own
// CA when it joins nobody, plaintext only with InsecureMesh. It returns
// the gossip keyring to start with, if any.
func (c *cluster) openTrust(dataDir string) (*Keyring, error) {
	dir := TrustDir(dataDir)
	cert, err := trust.LoadNodeCert(dir)
	var joinedRing []byte
	replaced := false
	switch {
	case err == nil && loneCA(dir) && len(c.cfg.Join) > 0:
		// Its own CA, never shared: a join token replaces it by the mesh's.
		if c.cfg.JoinToken == "" {
			return nil, fmt.Errorf("%w (this node's CA in %s was made at its first start and is not the mesh's)", ErrJoinNeedsToken, dir)
		}
		b, err := c.joinMesh(dir, true)
		if err != nil {
			return nil, err
		}
		cert, joinedRing, replaced = b.TLSCertificate(), b.Keyring, true
	case err == nil:
	case errors.Is(err, fs.ErrNotExist):
		switch {
		case c.cfg.JoinToken != "":
			b, err := c.joinMesh(dir, false)
			if err != nil {
				return nil, err
			}
			cert, joinedRing = b.TLSCertificate(), b.Keyring
		case c.cfg.InsecureMesh:
			c.log.Warn("--insecure-mesh: raft and the cluster gRPC run in plaintext; anyone who reaches their ports can read and write the registry")
			return nil, nil
		case len(c.cfg.Join) > 0:
			return nil, ErrJoinNeedsToken
		default:
			if err := c.makeLoneCA(dir); err != nil {
				return nil, err
			}
			if cert, err = trust.LoadNodeCert(dir); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrTrust, err)
			}
		}
	default:
		return nil, fmt.Errorf("%w: %w", ErrTrust, err)
	}
	if replaced {
		defer func() {
			if err := shareCA(dir); err != nil {
				c.log.Error("trust: remove the lone CA marker", "err", err)
			}
		}()
	}
	roots, err := trust.LoadRoots(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTrust, err)
	}
	id, err := trust.CertIdentity(cert.Leaf)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTrust, err)
	}
	if id.Name != c.name {
		return nil, fmt.Errorf("%w: the certificate in %s is for node %q, not %q; pass --name %s or use another data dir",
			ErrTrust, dir, id.Name, c.name, id.Name)
	}
	if c.cfg.Server && id.Role != trust.RoleServer {
		return nil, fmt.Errorf("%w: --server needs a server certificate; this node's is for role %s (join with a token from `harn token create --server`)",
			ErrTrust, id.Role)
	}
	t := &meshTrust{dir: dir, holder: trust.NewHolder(&cert, roots), revs: trust.NewRevocationList()}
	if id.Role == trust.RoleServer {
		a, err := trust.LoadAuthority(dir, c.clock)
		if err != nil && !errors.Is(err, trust.ErrNoCA) {
			return nil, fmt.Errorf("%w: %w", ErrTrust, err)
		}
		if a != nil {
			t.auth.Store(a)
			// The CA file's roots may be newer than ca.pem's (a rotation).
			t.holder.SetRoots(a.Roots())
		}
	}
	if t.pending, err = OpenPendingTokens(dataDir); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTrust, err)
	}
	c.trust = t
	if len(joinedRing) > 0 {
		k, err := DecodeKeyring(joinedRing)
		if err != nil {
			return nil, err
		}
		if err := SaveKeyring(dir, k); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrTrust, err)
		}
		return k, nil
	}
	k, err := LoadKeyring(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTrust, err)
	}
	return k, nil
}

// joinRPCAddrs are the cluster gRPC addresses to join through: JoinRPC,
// else each gossip seed's host at its port plus 2 (7710 → 7712, the
// default ports' layout).
func (cc ClusterConfig) joinRPCAddrs() []string {
	if len(cc.JoinRPC) > 0 {
		return cc.JoinRPC
	}
	var out []string
	for _, s := range cc.Join {
		h, p, err := net.SplitHostPort(s)
		if err != nil {
			continue
		}
		port, err := strconv.Atoi(p)
		if err != nil {
			continue
		}
		out = append(out, net.JoinHostPort(h, strconv.Itoa(port+DefaultRPCPort-DefaultGossipPort)))
	}
	return out
}

// joinMesh redeems the join token at the first seed that answers and saves
// what it gets; replace drops this node's lone CA first.
func (c *cluster) joinMesh(dir string, replace bool) (*trust.Bundle, error) {
	tok, err := trust.ParseToken(c.cfg.JoinToken)
	if err != nil {
		return nil, fmt.Errorf("%w: --join-token: %w", ErrTrust, err)
	}
	addrs := c.cfg.joinRPCAddrs()
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: --join-token needs --join host:port (a server's gossip address)", ErrTrust)
	}
	var last error
	for _, a := range addrs {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		opts := []trust.JoinOption{trust.JoinClock(c.clock)}
		if c.cfg.Server {
			opts = append(opts, trust.JoinAsServer())
		}
		b, err := trust.Join(ctx, a, tok, c.name, opts...)
		cancel()
		if err == nil {
			if replace {
				if err := dropLoneCA(dir); err != nil {
					return nil, err
				}
				c.log.Info("replaced this node's lone CA by the mesh's", "dir", dir)
			}
			if err := b.Save(dir); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrTrust, err)
			}
			c.log.Info("joined the mesh", "via", a, "identity", b.Identity.String(), "token", tok.Redacted())
			return b, nil
		}
		last = err
		var ne net.Error
		if !errors.As(err, &ne) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, trust.ErrJoinRateLimited) {
			break // refused: another server would refuse too (a rate limit is each server's own)
		}
	}
	return nil, fmt.Errorf("%w: join: %w", ErrTrust, last)
}

// serverOptions are the cluster gRPC server's options with trust on.
func (c *cluster) serverOptions() []grpc.ServerOption {
	t := c.trust
	g := &trust.Guard{Revocations: t.revs, Clock: c.clock, Log: c.log}
	return []grpc.ServerOption{
		grpc.Creds(credentials.NewTLS(trust.ServerTLS(t.holder, trust.AllowAnonymous(), trust.WithRevocations(t.revs),
			trust.WithClock(c.clock), trust.WithLogger(c.log)))),
		grpc.ChainUnaryInterceptor(g.Unary()), grpc.ChainStreamInterceptor(g.Stream()),
	}
}

// raftTLS is the raft stream's TLS config with trust on.
func (c *cluster) raftTLS() *tls.Config {
	t := c.trust
	return trust.RaftTLS(t.holder, trust.WithRevocations(t.revs), trust.WithClock(c.clock), trust.WithLogger(c.log))
}

// clientCreds are the credentials for dialing the named member.
func (c *cluster) clientCreds(name string) credentials.TransportCredentials {
	t := c.trust
	return credentials.NewTLS(trust.ClientTLS(t.holder, trust.ExpectName(name), trust.WithRevocations(t.revs),
		trust.WithClock(c.clock), trust.WithLogger(c.log)))
}

// startTrust mounts the join service on servers holding the CA and starts
// certificate renewal. Called once the rpc server exists, before Serve.
func (c *cluster) startTrust(srv *grpc.Server) {
	t := c.trust
	if t.authority() != nil {
		t.join = &trust.JoinServer{
			Authority: &recordingSigner{c: c},
			Tokens:    &registryTokens{c: c},
			Keyring: func() ([]byte, error) {
				if e, ok := c.store.KVGet(kvKeyring); ok {
					return e.Value, nil
				}
				k, err := LoadKeyring(t.dir)
				if errors.Is(err, fs.ErrNotExist) {
					return nil, nil
				}
				if err != nil {
					return nil, err
				}
				return json.Marshal(k)
			},
			CheckName:   c.checkJoinName,
			Revocations: t.revs,
			Clock:       c.clock,
			Log:         c.log,
		}
		trust.RegisterService(srv, t.join)
	}
	renew := c.renewAtServer
	if t.authority() != nil {
		renew = func(ctx context.Context) (*trust.Bundle, error) {
			return trust.SelfRenew(t.authority(), t.holder, 0)(ctx)
		}
	}
	t.renewer = &trust.Renewer{Holder: t.holder, Renew: renew, Clock: c.clock, Log: c.log,
		Save: func(b *trust.Bundle) error {
			if err := b.Save(t.dir); err != nil {
				return err
			}
			c.start(func() { c.dropConnsAfterRenewal(trust.SerialString(b.Cert)) })
			if t.authority() != nil {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				return c.recordIssued(ctx, b.Cert)
			}
			return nil
		}}
}

// checkJoinName refuses a name that an alive member holds.
func (c *cluster) checkJoinName(name string) error {
	if name == c.name {
		return fmt.Errorf("the name %q is this server's", name)
	}
	if m, ok := c.member(name); ok && m.Status == mesh.StatusAlive {
		return fmt.Errorf("node %q is an alive member of the mesh", name)
	}
	return nil
}

// renewAtServer renews this node's certificate at an alive server.
func (c *cluster) renewAtServer(ctx context.Context) (*trust.Bundle, error) {
	var last error = errors.New("node: no alive server to renew the certificate at")
	for _, m := range c.mesh.Members() {
		if m.Status != mesh.StatusAlive || m.Meta.Role != mesh.RoleServer || m.Meta.RPCAddr == "" || m.Name == c.name {
			continue
		}
		b, err := trust.RenewAt(ctx, m.Meta.RPCAddr, c.trust.holder, trust.ExpectName(m.Name), trust.RequireRole(trust.RoleServer),
			trust.WithRevocations(c.trust.revs), trust.WithClock(c.clock))
		if err == nil {
			return b, nil
		}
		last = err
	}
	return nil, last
}

// issuedRecord is what the registry keeps of an issued certificate, so
// that removing a node can revoke every certificate it holds.
type issuedRecord struct {
	Name     string    `json:"name"`
	Role     string    `json:"role"`
	NotAfter time.Time `json:"not_after"`
}

// revokedRecord is one entry of the revocation list.
type revokedRecord struct {
	Name string    `json:"name"`
	At   time.Time `json:"at"`
}

// dropConnsAfterRenewal closes the cached peer connections once the holder
// presents the renewed certificate, so that the next calls handshake with
// it: the old one would be refused per call once it expires.
func (c *cluster) dropConnsAfterRenewal(serial string) {
	for i := 0; i < 100; i++ {
		if leaf := c.trust.holder.Leaf(); leaf != nil && trust.SerialString(leaf) == serial {
			break
		}
		if !clock.Sleep(c.clock, 10*time.Millisecond, c.stop) {
			return
		}
	}
	c.connMu.Lock()
	old := c.conns
	c.conns = map[string]*grpc.ClientConn{}
	c.connMu.Unlock()
	for _, cc := range old {
		cc.Close()
	}
}
