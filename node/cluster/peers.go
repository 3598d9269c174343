package cluster

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/api/apigrpc"
)

// peerConns caches the client connections to peers' cluster gRPC; with
// trust on, over mutual TLS that expects the peer's certificate.
type peerConns struct {
	c     *Cluster
	trace []grpc.DialOption // tracing of calls to peers (none when off)

	mu    sync.Mutex
	conns map[string]*grpc.ClientConn
}

// get returns a (cached) connection to a node's rpc address.
func (p *peerConns) get(name, addr string) (*grpc.ClientConn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := name + "\x00" + addr
	if cc, ok := p.conns[key]; ok {
		return cc, nil
	}
	creds := insecure.NewCredentials()
	if p.c.trust != nil {
		creds = p.c.trust.ClientCreds(name)
	}
	max := p.c.cfg.MaxPeerReply
	cc, err := grpc.NewClient(addr, append([]grpc.DialOption{grpc.WithTransportCredentials(creds),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 10 * time.Second, Timeout: 3 * time.Second}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(max))}, p.trace...)...)
	if err != nil {
		return nil, err
	}
	p.conns[key] = cc
	return cc, nil
}

// dropAll closes the cached connections, so that the next calls dial
// again (with a renewed certificate).
func (p *peerConns) dropAll() {
	p.mu.Lock()
	old := p.conns
	p.conns = map[string]*grpc.ClientConn{}
	p.mu.Unlock()
	for _, cc := range old {
		cc.Close()
	}
}

func (p *peerConns) closeAll() { p.dropAll() }

// member returns the mesh member with name, if known.
func (c *Cluster) member(name string) (mesh.Member, bool) {
	for _, m := range c.mesh.Members() {
		if m.Name == name {
			return m, true
		}
	}
	return mesh.Member{}, false
}

// ErrNotMember: a call to a node that is not a known mesh member (or
// advertises no rpc address).
var ErrNotMember = errors.New("node: not a known mesh member")

// Conn is the (cached) connection to the named member's cluster gRPC,
// over mutual TLS that expects its certificate: the Cluster service's
// client (ClientOf) and the node's other services on that port.
func (c *Cluster) Conn(name string) (*grpc.ClientConn, error) {
	m, ok := c.member(name)
	if !ok || m.Meta.RPCAddr == "" {
		return nil, fmt.Errorf("%w: %q", ErrNotMember, name)
	}
	return c.conns.get(name, m.Meta.RPCAddr)
}

// ClientOf returns a Cluster client for the named node.
func (c *Cluster) ClientOf(name string) (apigrpc.ClusterClient, error) {
	cc, err := c.Conn(name)
	if err != nil {
		return nil, err
	}
	return apigrpc.NewClusterClient(cc), nil
}

// ErrPeerReply: a peer's reply was over a bound (a *PeerReplyError).
var ErrPeerReply = errors.New("node: a peer's reply is over its bound")

// PeerReplyError is a peer's reply whose list holds more than
// MaxPeerListItems entries.
type PeerReplyError struct {
	// Peer says whose reply it is ("node b", "the owner of session s").
	Peer, What string
	N          int
}

func (e *PeerReplyError) Error() string {
	return fmt.Sprintf("node: the reply of %s holds %d %s, more than %d; refused", e.Peer, e.N, e.What, MaxPeerListItems)
}

// Unwrap makes a PeerReplyError match ErrPeerReply.
func (e *PeerReplyError) Unwrap() error { return ErrPeerReply }

// CheckPeerList refuses a peer's list longer than MaxPeerListItems.
func CheckPeerList(peer, what string, n int) error {
	if n > MaxPeerListItems {
		return &PeerReplyError{Peer: peer, What: what, N: n}
	}
	return nil
}
