package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/apigrpc"
)

// A peer's reply is bounded: a reply over MaxPeerReply is refused from its
// length prefix, before its body is read, and a list over MaxPeerListItems
// is refused whatever its size.

// bigPeer answers Presence with a blob of size bytes.
type bigPeer struct {
	apigrpc.UnimplementedClusterServer
	size int
}

func (p *bigPeer) Presence(context.Context, *api.PresenceRequest) (*api.PresenceResponse, error) {
	return &api.PresenceResponse{Blob: make([]byte, p.size)}, nil
}

func servePeer(t *testing.T, srv apigrpc.ClusterServer) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(grpc.MaxSendMsgSize(64 << 20))
	apigrpc.RegisterClusterServer(g, srv)
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	return lis.Addr().String()
}

// testConns is a cluster's connections with only what they need.
func testConns(t *testing.T, maxReply int) *peerConns {
	c := &Cluster{cfg: Config{MaxPeerReply: maxReply}.WithDefaults()}
	c.conns = &peerConns{c: c, conns: map[string]*grpc.ClientConn{}}
	t.Cleanup(c.conns.closeAll)
	return c.conns
}

func TestPeerReplyOverTheBoundIsRefused(t *testing.T) {
	if got := testConns(t, 0).c.cfg.MaxPeerReply; got != 16<<20 {
		t.Fatalf("default bound %d, want 16 MiB", got)
	}
	call := func(c *peerConns, size int) error {
		cc, err := c.get("peer", servePeer(t, &bigPeer{size: size}))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		res, err := apigrpc.NewClusterClient(cc).Presence(ctx, &api.PresenceRequest{})
		if err == nil && len(res.Blob) != size {
			t.Fatalf("a %d-byte reply came as %d bytes", size, len(res.Blob))
		}
		return err
	}
	// The default bound refuses a reply one byte over it.
	if err := call(testConns(t, 0), DefaultMaxPeerReply+1); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("16 MiB + 1 under the default bound: err %v, want ResourceExhausted", err)
	}
	// The bound is the configured one.
	small := testConns(t, 1<<20)
	for _, tc := range []struct {
		size int
		ok   bool
	}{{64 << 10, true}, {1<<20 - 64, true}, {1<<20 + 1, false}, {8 << 20, false}} {
		err := call(small, tc.size)
		if tc.ok && err != nil {
			t.Fatalf("a %d-byte reply under a 1 MiB bound: %v", tc.size, err)
		}
		if !tc.ok && status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("a %d-byte reply under a 1 MiB bound: err %v, want ResourceExhausted", tc.size, err)
		}
	}
}

// TestPeerReplyOverTheBoundIsRefusedBeforeItsBody: a peer announces a
// 1 GiB message and sends none of it. The call fails at once with
// ResourceExhausted: the client did not wait to read, or buffer, the body.
func TestPeerReplyOverTheBoundIsRefusedBeforeItsBody(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	hs := &http.Server{Protocols: &p, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/grpc")
		w.WriteHeader(http.StatusOK)
		var hdr [5]byte
		binary.BigEndian.PutUint32(hdr[1:], 1<<30)
		w.Write(hdr[:])
		w.(http.Flusher).Flush()
		<-r.Context().Done() // the body never comes
	})}
	go hs.Serve(lis)
	t.Cleanup(func() { hs.Close() })
	c := testConns(t, 0)
	cc, err := c.get("liar", lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err = apigrpc.NewClusterClient(cc).Presence(ctx, &api.PresenceRequest{})
	if status.Code(err) != codes.ResourceExhausted || ctx.Err() != nil {
		t.Fatalf("err %v (ctx %v), want ResourceExhausted before the deadline", err, ctx.Err())
	}
}

func TestPeerListOverTheBoundIsRefused(t *testing.T) {
	if err := CheckPeerList("node b", "events", MaxPeerListItems); err != nil {
		t.Fatalf("at the bound: %v", err)
	}
	err := CheckPeerList("node b", "events", MaxPeerListItems+1)
	var pe *PeerReplyError
	if !errors.As(err, &pe) || !errors.Is(err, ErrPeerReply) || !strings.Contains(err.Error(), "node b") {
		t.Fatalf("over the bound: %v", err)
	}
}
