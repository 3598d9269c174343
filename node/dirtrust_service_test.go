package node

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	grpcpeer "google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/operator"
)

func peerCtx(p operator.Peer) context.Context { return operator.WithPeer(context.Background(), p) }

// TestOnlyTheNodesOwnUserOnItsSocketMayTrustADirectory: the trust op
// answers the node's own uid on the local socket; another uid (root for
// another user's node too), a peer the system did not name, a call
// without a socket peer (a routed one) are refused before anything is
// read or recorded.
func TestOnlyTheNodesOwnUserOnItsSocketMayTrustADirectory(t *testing.T) {
	n := openNode(t, testConfig(t, t.TempDir()))
	s := n.trust.Local()
	project := t.TempDir()
	if err := os.MkdirAll(filepath.Join(project, ".harn"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(project, ".harn", "mcp.json"), []byte(`{"mcpServers":{"x":{"command":"/bin/true"}}}`), 0o600)
	add := &api.DirTrustRequest{Op: "add", Dir: project}
	for name, ctx := range map[string]context.Context{
		"another uid":  peerCtx(operator.Peer{UID: os.Geteuid() + 1, Known: true}),
		"unknown peer": peerCtx(operator.Peer{}),
		"no peer":      context.Background(),
		"mesh peer":    grpcpeer.NewContext(context.Background(), &grpcpeer.Peer{Addr: &net.UnixAddr{Name: "s", Net: "unix"}, AuthInfo: credentials.TLSInfo{}}),
	} {
		if _, err := s.DirTrust(ctx, add); status.Code(err) != codes.PermissionDenied {
			t.Errorf("%s: %v; want PermissionDenied", name, err)
		}
	}
	if len(n.trust.Dirs().List()) != 0 {
		t.Fatal("a refused caller trusted a directory")
	}
	own := peerCtx(operator.Peer{UID: os.Geteuid(), Known: true})
	res, err := s.DirTrust(own, add)
	if err != nil || len(res.GetDirs()) != 1 || !res.GetCheck().GetTrusted() {
		t.Fatalf("the owner's add: %v %v", res, err)
	}
	// The data dir itself is never trusted.
	if _, err := s.DirTrust(own, &api.DirTrustRequest{Op: "add", Dir: n.cfg.DataDir}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("trusting the data dir: %v; want InvalidArgument", err)
	}
}
