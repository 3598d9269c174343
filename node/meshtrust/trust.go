package meshtrust

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/raftstore"
	"github.com/harn-dev/harn/util/clock"
)

// Trust errors. Every failure to start because of mesh trust wraps ErrTrust.
var (
	ErrTrust = errors.New("node: mesh trust")
	// ErrNotServer: a trust operation that needs the mesh CA ran on a node
	// that is not a server holding it.
	ErrNotServer = errors.New("node: this needs a mesh server that holds the CA (run it on a server)")
	// ErrClosed: the trust room is shutting down.
	ErrClosed = errors.New("node: the node is closing")
)

// Registry keys of the trust records (raftstore's key-value space).
const (
	KVTokenPrefix   = "trust/token/"
	KVIssuedPrefix  = "trust/issued/"
	KVRevokedPrefix = "trust/revoked/"
	KVKeyring       = "gossip/keyring"
	KVRoots         = "trust/roots"
	KVCA            = "trust/ca"
)

// pendingTokensFile holds tokens made while no node ran (harn mesh init,
// harn token create offline); a server moves them into the registry.
const pendingTokensFile = "tokens-pending.json"

// OpenPendingTokens opens the store of tokens made while no node ran.
func OpenPendingTokens(dataDir string) (*trust.FileTokenStore, error) {
	if err := trust.EnsurePrivateDir(layout.TrustDir(dataDir)); err != nil {
		return nil, err
	}
	return trust.OpenFileTokenStore(filepath.Join(layout.TrustDir(dataDir), pendingTokensFile))
}

// Host is what the trust room asks of the cluster once both are open: the
// registry (reads of its replica, writes through the leader), the mesh's
// members, and a way to drop cached peer connections.
type Host interface {
	Apply(ctx context.Context, cmd raftstore.Command) (uint64, error)
	KVGet(key string) (raftstore.KVEntry, bool)
	KVList(prefix string) []raftstore.KVEntry
	// WaitForApplied waits until the local replica reflects index.
	WaitForApplied(ctx context.Context, index uint64) error
	// LeaderKnown reports whether the registry has a leader now.
	LeaderKnown() bool
	Members() []mesh.Member
	DropConns()
}

// Config configures the trust room.
type Config struct {
	// Name is this node's name; DataDir its data dir.
	Name, DataDir string
	// Server: the node runs with --server.
	Server bool
	// Join are the gossip seeds, JoinRPC the seeds' cluster gRPC addresses
	// (empty: each seed's port plus 2).
	Join, JoinRPC []string
	// JoinToken is redeemed at the first start without a certificate.
	JoinToken string
	// InsecureMesh runs without a certificate, in plaintext.
	InsecureMesh bool
	// GossipKey is the primary key of a lone CA's fresh keyring (nil: a
	// new one).
	GossipKey []byte
	// RegistryTimeout bounds a token write; ForwardTimeout a record.
	RegistryTimeout, ForwardTimeout time.Duration
	Clock                           clock.Clock
	Logger                          *slog.Logger
}

// Trust is a node's mesh trust: its certificate, the CA on servers, the
// join and renewal service, revocations, all wired from the trust room
// (node/trust) to the registry, raft and the cluster gRPC. Nil on a mesh
// without a CA. It owns its goroutines; Close waits for them.
type Trust struct {
	cfg     Config
	log     *slog.Logger
	clock   clock.Clock
	dir     string
	holder  *trust.Holder
	auth    atomic.Pointer[trust.Authority] // servers holding the CA; nil otherwise (a CA rotation swaps it)
	revs    *trust.RevocationList
	renewer *trust.Renewer
	join    *trust.JoinServer
	pending *trust.FileTokenStore
	host    Host

	mu          sync.Mutex
	rootsIdx    uint64
	caIdx       uint64
	ownRecorded string // serial of this node's certificate known to be recorded
	ownRevoked  bool
	removed     map[string]bool // removedNames at the last sync
	renewing    bool            // a renewal started by renewSoon runs
	renewDue    bool            // the CAs changed: renewSoon checks the certificate until it is current
	lastRenew   time.Time       // when renewSoon last started one
	redeemMu    sync.Mutex      // one token redemption at a time on this server
	conflicts   atomic.Int64    // token writes that conflicted (RedeemConflicts)

	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// Open loads this node's certificate: joining the mesh with the join
// token when it has none (or holds only its own lone CA), making its own
// CA when it joins nobody, none (nil Trust) only with InsecureMesh. It
// returns the gossip keyring to start with, if any.
func Open(cfg Config) (*Trust, *Keyring, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	t := &Trust{cfg: cfg, log: cfg.Logger, clock: cfg.Clock, dir: layout.TrustDir(cfg.DataDir), stop: make(chan struct{}),
		renewDue: true}
	ring, err := t.open()
	if err != nil {
		return nil, nil, err
	}
	if t.holder == nil {
		return nil, nil, nil
	}
	return t, ring, nil
}

func (t *Trust) open() (*Keyring, error) {
	dir := t.dir
	cert, err := trust.LoadNodeCert(dir)
	var joinedRing []byte
	replaced := false
	switch {
	case err == nil && loneCA(dir) && len(t.cfg.Join) > 0:
		// Its own CA, never shared: a join token replaces it by the mesh's.
		if t.cfg.JoinToken == "" {
			return nil, fmt.Errorf("%w (this node's CA in %s was made at its first start and is not the mesh's)", ErrJoinNeedsToken, dir)
		}
		b, err := t.joinMesh(true)
		if err != nil {
			return nil, err
		}
		cert, joinedRing, replaced = b.TLSCertificate(), b.Keyring, true
	case err == nil:
	case errors.Is(err, fs.ErrNotExist):
		switch {
		case t.cfg.JoinToken != "":
			b, err := t.joinMesh(false)
			if err != nil {
				return nil, err
			}
			cert, joinedRing = b.TLSCertificate(), b.Keyring
		case t.cfg.InsecureMesh:
			t.log.Warn("--insecure-mesh: raft and the cluster gRPC run in plaintext; anyone who reaches their ports can read and write the registry")
			return nil, nil
		case len(t.cfg.Join) > 0:
			return nil, ErrJoinNeedsToken
		default:
			if err := t.makeLoneCA(); err != nil {
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
				t.log.Error("trust: remove the lone CA marker", "err", err)
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
	if id.Name != t.cfg.Name {
		return nil, fmt.Errorf("%w: the certificate in %s is for node %q, not %q; pass --name %s or use another data dir",
			ErrTrust, dir, id.Name, t.cfg.Name, id.Name)
	}
	if t.cfg.Server && id.Role != trust.RoleServer {
		return nil, fmt.Errorf("%w: --server needs a server certificate; this node's is for role %s (join with a token from `harn token create --server`)",
			ErrTrust, id.Role)
	}
	t.holder, t.revs = trust.NewHolder(&cert, roots), trust.NewRevocationList()
	if id.Role == trust.RoleServer {
		a, err := trust.LoadAuthority(dir, t.clock)
		if err != nil && !errors.Is(err, trust.ErrNoCA) {
			return nil, fmt.Errorf("%w: %w", ErrTrust, err)
		}
		if a != nil {
			t.auth.Store(a)
			// The CA file's roots may be newer than ca.pem's (a rotation).
			t.holder.SetRoots(a.Roots())
		}
	}
	if t.pending, err = OpenPendingTokens(t.cfg.DataDir); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTrust, err)
	}
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

// Dir is the trust directory.
func (t *Trust) Dir() string { return t.dir }

// Holder holds this node's certificate and the trusted CAs.
func (t *Trust) Holder() *trust.Holder { return t.holder }

// Revocations is the mesh's revocation list, as of the last sync.
func (t *Trust) Revocations() *trust.RevocationList { return t.revs }

// Authority is the server's CA, nil on other nodes (tests, doctor).
func (t *Trust) Authority() *trust.Authority { return t.auth.Load() }

// Renewer renews this node's certificate (tests make it check now).
func (t *Trust) Renewer() *trust.Renewer { return t.renewer }

// JoinRPCAddrs are the cluster gRPC addresses to join through: JoinRPC,
// else each gossip seed's host at its port plus 2 (7710 → 7712, the
// default ports' layout).
func JoinRPCAddrs(join, joinRPC []string) []string {
	if len(joinRPC) > 0 {
		return joinRPC
	}
	var out []string
	for _, s := range join {
		h, p, err := net.SplitHostPort(s)
		if err != nil {
			continue
		}
		port, err := strconv.Atoi(p)
		if err != nil {
			continue
		}
		out = append(out, net.JoinHostPort(h, strconv.Itoa(port+layout.DefaultRPCPort-layout.DefaultGossipPort)))
	}
	return out
}

// joinMesh redeems the join token at the first seed that answers and saves
// what it gets; replace drops this node's lone CA first.
func (t *Trust) joinMesh(replace bool) (*trust.Bundle, error) {
	tok, err := trust.ParseToken(t.cfg.JoinToken)
	if err != nil {
		return nil, fmt.Errorf("%w: --join-token: %w", ErrTrust, err)
	}
	addrs := JoinRPCAddrs(t.cfg.Join, t.cfg.JoinRPC)
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: --join-token needs --join host:port (a server's gossip address)", ErrTrust)
	}
	var last error
	for _, a := range addrs {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		opts := []trust.JoinOption{trust.JoinClock(t.clock)}
		if t.cfg.Server {
			opts = append(opts, trust.JoinAsServer())
		}
		b, err := trust.Join(ctx, a, tok, t.cfg.Name, opts...)
		cancel()
		if err == nil {
			if replace {
				if err := dropLoneCA(t.dir); err != nil {
					return nil, err
				}
				t.log.Info("replaced this node's lone CA by the mesh's", "dir", t.dir)
			}
			if err := b.Save(t.dir); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrTrust, err)
			}
			t.log.Info("joined the mesh", "via", a, "identity", b.Identity.String(), "token", tok.Redacted())
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

// ServerOptions are the cluster gRPC server's options: mutual TLS with
// the mesh's certificates (anonymous callers allowed for the join), and
// the revocation guard.
func (t *Trust) ServerOptions() []grpc.ServerOption {
	g := &trust.Guard{Revocations: t.revs, Clock: t.clock, Log: t.log}
	return []grpc.ServerOption{
		grpc.Creds(credentials.NewTLS(trust.ServerTLS(t.holder, trust.AllowAnonymous(), trust.WithRevocations(t.revs),
			trust.WithClock(t.clock), trust.WithLogger(t.log)))),
		grpc.ChainUnaryInterceptor(g.Unary()), grpc.ChainStreamInterceptor(g.Stream()),
	}
}

// RaftTLS is the raft stream's TLS config.
func (t *Trust) RaftTLS() *tls.Config {
	return trust.RaftTLS(t.holder, trust.WithRevocations(t.revs), trust.WithClock(t.clock), trust.WithLogger(t.log))
}

// ClientCreds are the credentials for dialing the named member.
func (t *Trust) ClientCreds(name string) credentials.TransportCredentials {
	return credentials.NewTLS(trust.ClientTLS(t.holder, trust.ExpectName(name), trust.WithRevocations(t.revs),
		trust.WithClock(t.clock), trust.WithLogger(t.log)))
}

// Attach mounts the join service on a server holding the CA and sets up
// certificate renewal, once the cluster exists (host) and its rpc server
// is built, before it serves.
func (t *Trust) Attach(host Host, srv *grpc.Server) {
	t.host = host
	if t.Authority() != nil {
		t.join = &trust.JoinServer{
			Authority: &recordingSigner{t: t},
			Tokens:    &registryTokens{t: t},
			Keyring: func() ([]byte, error) {
				if e, ok := host.KVGet(KVKeyring); ok {
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
			CheckName:   func(name string) error { return checkJoinName(t, name) },
			Revocations: t.revs,
			Clock:       t.clock,
			Log:         t.log,
		}
		trust.RegisterService(srv, t.join)
	}
	renew := func(ctx context.Context) (*trust.Bundle, error) { return renewAtServer(ctx, t) }
	if t.Authority() != nil {
		renew = func(ctx context.Context) (*trust.Bundle, error) {
			return trust.SelfRenew(t.Authority(), t.holder, 0)(ctx)
		}
	}
	t.renewer = &trust.Renewer{Holder: t.holder, Renew: renew, Clock: t.clock, Log: t.log,
		Save: func(b *trust.Bundle) error {
			if err := b.Save(t.dir); err != nil {
				return err
			}
			t.goLoop(func() { dropConnsAfterRenewal(t, trust.SerialString(b.Cert)) })
			if t.Authority() != nil {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				return t.recordIssued(ctx, b.Cert)
			}
			return nil
		}}
}

// Start starts certificate renewal (after Attach).
func (t *Trust) Start() {
	if t.renewer != nil {
		t.renewer.Start()
	}
}

// Close stops renewal and waits for the trust room's goroutines. Safe
// twice, and on a nil Trust.
func (t *Trust) Close() {
	if t == nil {
		return
	}
	t.closeOnce.Do(func() {
		close(t.stop)
		if t.renewer != nil {
			t.renewer.Close()
		}
		t.wg.Wait()
	})
}

// goLoop runs fn in a goroutine the trust room owns.
func (t *Trust) goLoop(fn func()) {
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		fn()
	}()
}

// stopContext is a context that ends when the trust room closes.
func (t *Trust) stopContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	t.goLoop(func() {
		select {
		case <-t.stop:
			cancel()
		case <-ctx.Done():
		}
	})
	return ctx, cancel
}

// checkJoinName refuses a name that an alive member holds.
func checkJoinName(t *Trust, name string) error {
	if name == t.cfg.Name {
		return fmt.Errorf("the name %q is this server's", name)
	}
	for _, m := range t.host.Members() {
		if m.Name == name && m.Status == mesh.StatusAlive {
			return fmt.Errorf("node %q is an alive member of the mesh", name)
		}
	}
	return nil
}

// renewAtServer renews this node's certificate at an alive server.
func renewAtServer(ctx context.Context, t *Trust) (*trust.Bundle, error) {
	var last error = errors.New("node: no alive server to renew the certificate at")
	for _, m := range t.host.Members() {
		if m.Status != mesh.StatusAlive || m.Meta.Role != mesh.RoleServer || m.Meta.RPCAddr == "" || m.Name == t.cfg.Name {
			continue
		}
		b, err := trust.RenewAt(ctx, m.Meta.RPCAddr, t.holder, trust.ExpectName(m.Name), trust.RequireRole(trust.RoleServer),
			trust.WithRevocations(t.revs), trust.WithClock(t.clock))
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
func dropConnsAfterRenewal(t *Trust, serial string) {
	for i := 0; i < 100; i++ {
		if leaf := t.holder.Leaf(); leaf != nil && trust.SerialString(leaf) == serial {
			break
		}
		if !clock.Sleep(t.clock, 10*time.Millisecond, t.stop) {
			return
		}
	}
	t.host.DropConns()
}

// Refuse logs a refusal at this node, naming the caller's certificate, and
// returns the status the caller sees.
func Refuse(log *slog.Logger, method string, caller trust.Identity, err error) error {
	log.Warn("trust: refused", "method", method, "caller", caller.String(), "err", err)
	return status.Error(codes.PermissionDenied, err.Error())
}

// writePrivateFile writes name in dir atomically, 0600, dir 0700.
func writePrivateFile(dir, name string, b []byte) error {
	if err := trust.EnsurePrivateDir(dir); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+name+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, name))
}
