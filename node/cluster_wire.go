package node

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/apigrpc"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/cluster"
	"github.com/harn-dev/harn/node/coordsvc"
	"github.com/harn-dev/harn/node/gossip"
	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/node/meshtrust"
	"github.com/harn-dev/harn/node/tasksvc"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/node/web"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/raftstore"
)

// The cluster room (node/cluster) and the mesh's trust (node/meshtrust) as
// the node wires them: their configuration, errors and constants under
// the names the daemon and its tests know, and the node's side of the
// cluster's interfaces.

// ClusterConfig configures the node's part in the mesh (cluster.Config).
type ClusterConfig = cluster.Config

// MeshProfile names the gossip timers; RaftProfile the registry's.
type (
	MeshProfile = cluster.MeshProfile
	RaftProfile = cluster.RaftProfile
)

// DefaultClusterConfig is a lone machine's mesh on the default ports.
func DefaultClusterConfig() ClusterConfig { return cluster.DefaultConfig() }

// Default cluster ports, bounds and timers.
const (
	DefaultGossipPort          = layout.DefaultGossipPort
	DefaultRaftPort            = layout.DefaultRaftPort
	DefaultRPCPort             = layout.DefaultRPCPort
	DefaultHTTPPort            = layout.DefaultHTTPPort
	DefaultMaxPeerReply        = cluster.DefaultMaxPeerReply
	MaxPeerListItems           = cluster.MaxPeerListItems
	DefaultMaxPresenceBytes    = cluster.DefaultMaxPresenceBytes
	DefaultResyncInterval      = cluster.DefaultResyncInterval
	DefaultForwardTimeout      = cluster.DefaultForwardTimeout
	DefaultRegistrySyncTimeout = cluster.DefaultRegistrySyncTimeout
	DefaultOwnerReadTimeout    = cluster.DefaultOwnerReadTimeout
	DefaultOwnerTraceTimeout   = cluster.DefaultOwnerTraceTimeout
	DefaultPullTimeout         = cluster.DefaultPullTimeout
	DefaultTrustSync           = cluster.DefaultTrustSync
)

// Cluster and trust errors.
var (
	ErrNoLeader  = cluster.ErrNoLeader
	ErrGossipKey = cluster.ErrGossipKey
	ErrClosed    = cluster.ErrClosed
	ErrPeerReply = cluster.ErrPeerReply
	ErrTrust     = meshtrust.ErrTrust
	ErrNotServer = meshtrust.ErrNotServer
	// ErrJoinNeedsToken: a node asked to --join a mesh has no certificate
	// of it and no join token (and plaintext was not asked for).
	ErrJoinNeedsToken = meshtrust.ErrJoinNeedsToken
	ErrNoMesh         = cluster.ErrNoMesh
)

// PeerReplyError is a peer's reply over MaxPeerListItems entries.
type PeerReplyError = cluster.PeerReplyError

// checkPeerList refuses a peer's list longer than MaxPeerListItems.
func checkPeerList(peer, what string, n int) error { return cluster.CheckPeerList(peer, what, n) }

// GenerateGossipKey makes a fresh gossip key, base64-encoded.
func GenerateGossipKey() (string, error) {
	k, err := mesh.GenerateKey()
	if err != nil {
		return "", err
	}
	return mesh.EncodeKey(k), nil
}

// DecodeGossipKey decodes a base64 gossip key and checks its size.
func DecodeGossipKey(s string) ([]byte, error) { return mesh.DecodeKey(s) }

// Keyring is the gossip keyring (meshtrust.Keyring).
type Keyring = meshtrust.Keyring

// LoadKeyring reads the keyring of a trust directory.
func LoadKeyring(dir string) (*Keyring, error) { return meshtrust.LoadKeyring(dir) }

// SaveKeyring writes the keyring into a trust directory, 0600.
func SaveKeyring(dir string, k *Keyring) error { return meshtrust.SaveKeyring(dir, k) }

// DecodeKeyring parses a keyring blob.
func DecodeKeyring(b []byte) (*Keyring, error) { return meshtrust.DecodeKeyring(b) }

// openCluster builds and starts the node's part in the mesh. On error the
// returned cluster (nil only when it could not be built) holds what was
// opened; Close releases it.
func (n *Node) openCluster() (*cluster.Cluster, error) {
	c, err := cluster.New(n.cfg.Cluster, cluster.Deps{Name: n.cfg.Name, DataDir: n.cfg.DataDir, Version: n.cfg.Version,
		Clock: n.cfg.Clock, Logger: n.log, Root: n.cfg.Logger, Local: clusterLocal{n}, Peer: peerServer{peerService{n}, n.taskSvc.Peer(), n.coord.Peer()},
		Remote: n.remote, Tracer: n.cfg.TracerProvider, Notifier: func(h *gossip.Handler) mesh.Handler { return web.GossipNotifier(h, n.changes.Notify) }, Decorate: n.taskSvc.Decorate,
		Register: func(s *grpc.Server) { apigrpc.RegisterHostedPeerServer(s, n.hosts.Peer()) }})
	if err != nil {
		return nil, err
	}
	if err := c.Open(); err != nil {
		return c, err
	}
	n.cl = c
	return c, nil
}

// clusterLocal is the node's local half as the cluster sees it.
type clusterLocal struct{ n *Node }

var _ cluster.Local = clusterLocal{}

// LiveEntries are the gossiped entries of this node's live sessions.
func (l clusterLocal) LiveEntries() []gossip.Entry {
	n := l.n
	var out []gossip.Entry
	n.sess.EachLive(func(st *presence.State, hash string) {
		ge := gossip.EntryOf(st, hash)
		n.taskSvc.Decorate(&ge)
		out = append(out, ge)
	})
	return out
}

// LocalDigest is the presence digest of this node's live sessions.
func (l clusterLocal) LocalDigest() string {
	n := l.n
	var pairs [][2]string
	n.sess.EachLive(func(st *presence.State, hash string) {
		pairs = append(pairs, [2]string{st.SessionID, gossip.WithTask(hash, n.taskSvc.Brief(st.SessionID))})
	})
	return gossip.Digest(pairs)
}

func (l clusterLocal) Sessions(all bool) []presence.State            { return l.n.Sessions(all) }
func (l clusterLocal) Diagnose(source, msg string)                   { l.n.keep.Diagnose(source, msg, 0, "") }
func (l clusterLocal) ApplySwitches(all map[string]meshtrust.Switch) { l.n.taskSvc.ApplySwitches(all) }

// peerService answers the cluster gRPC's calls about this node's own
// sessions and tasks (cluster.PeerService).
type peerService struct{ n *Node }

var _ cluster.PeerService = peerServer{}

// MeshAddr is the "host:port" other nodes reach this node's gossip at (a
// seed for Join); "" without the mesh.
func (n *Node) MeshAddr() string {
	if n.cl == nil {
		return ""
	}
	return n.cl.Addrs().Gossip
}

// RaftAddr is the address the registry's Raft transport is bound to; ""
// without the mesh (or on a node that holds no raft log).
func (n *Node) RaftAddr() string {
	if n.cl == nil {
		return ""
	}
	return n.cl.Addrs().Raft
}

// RPCAddr is the address of the cluster gRPC service; "" without the mesh.
func (n *Node) RPCAddr() string {
	if n.cl == nil {
		return ""
	}
	return n.cl.Addrs().RPC
}

// Session is a session's live detail, for another node's reader.
func (s peerService) Session(ctx context.Context, req *api.SessionRequest) (*api.SessionResponse, error) {
	st, err := s.n.sess.Resolve(req.Id)
	if err != nil {
		return nil, statusErr(err)
	}
	return &api.SessionResponse{Session: api.RowOf(&st), Live: !st.Ended}, nil
}

// SessionTrace is a session's events, for another node's reader.
func (s peerService) SessionTrace(ctx context.Context, req *api.SessionRequest) (*api.TraceResponse, error) {
	st, err := s.n.sess.Resolve(req.Id)
	if err != nil {
		return nil, statusErr(err)
	}
	evs, err := s.n.roster.Events(st.SessionID)
	if err != nil {
		return nil, statusErr(err)
	}
	out := &api.TraceResponse{Session: api.RowOf(&st)}
	for i := range evs {
		out.Events = append(out.Events, wire.EventToAPI(&evs[i]))
	}
	return out, nil
}

// ReasonWriteRefused is the ErrorInfo reason of a registry write the
// leader's write authority refused (the caller's node may not make it).
const ReasonWriteRefused = api.ReasonWriteRefused

// writeRefusedStatus is the local API's status for a write refused by mesh
// trust: PermissionDenied with ReasonWriteRefused, so that a client tells
// it from a refused remote control without reading the text.
func writeRefusedStatus(err error) error {
	return apigrpc.WithReason(codes.PermissionDenied, ReasonWriteRefused, err.Error())
}

// DefaultSessionQuota is the live sessions one node may hold in the
// registry unless the servers set another --session-quota.
const DefaultSessionQuota = raftstore.DefaultSessionQuota

// ParseNotifyAdmins reads a --notify-admins value: NODE,... ("" names
// none).
func ParseNotifyAdmins(s string) ([]string, error) {
	var out []string
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		if n == "" && strings.TrimSpace(s) == "" {
			continue
		}
		if err := trust.ValidName(n); err != nil {
			return nil, fmt.Errorf("%w: --notify-admins: %w", ErrConfig, err)
		}
		out = append(out, n)
	}
	return out, nil
}

// peerServer is the cluster gRPC's peer service: peerService and the
// rooms' own parts.
type peerServer struct {
	peerService
	*tasksvc.TaskPeer
	*coordsvc.CoordPeer
}
