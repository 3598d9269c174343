package node

import (
	"errors"
	"net"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/raftstore"
)

// takePort holds a TCP port (and the UDP port of the same number, for
// gossip) on 127.0.0.1 until the test ends.
func takePort(t *testing.T) int {
	t.Helper()
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", l.Addr().String())
		if err != nil {
			l.Close()
			continue
		}
		t.Cleanup(func() { l.Close(); u.Close() })
		return port
	}
	t.Fatal("no free port")
	return 0
}

// TestOpenWithTakenPortClosesWhatItOpened: with any listener's port taken
// (past the check of every port, which TestBusyPortsAreReportedAtOnce
// tests), Open returns a *ListenError naming the listener and its flag,
// within the bound, and leaves no goroutine running.
func TestOpenWithTakenPortClosesWhatItOpened(t *testing.T) {
	for _, tc := range []struct {
		listener, flag string
		set            func(*ClusterConfig, int)
	}{
		{"rpc", "--rpc-port", func(c *ClusterConfig, p int) { c.RPCPort = p }},
		{"raft", "--raft-port", func(c *ClusterConfig, p int) { c.RaftPort = p }},
		{"gossip", "--gossip-port", func(c *ClusterConfig, p int) { c.GossipPort = p }},
	} {
		t.Run(tc.listener, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			dir := t.TempDir()
			cfg := testConfig(t, dir)
			cfg.Socket = filepath.Join(dir, "s.sock")
			cc := &cfg.Cluster
			cc.Enabled, cc.Bind = true, "127.0.0.1"
			cc.GossipPort, cc.RaftPort, cc.RPCPort, cc.HTTPPort = 0, 0, 0, 0
			cc.MeshProfile, cc.RaftProfile = mesh.ProfileLocal, raftstore.ProfileFast
			// The listener fails deep in Open, as a port taken after the
			// check of every port does.
			cfg.noPortCheck = true
			port := takePort(t)
			tc.set(cc, port)
			n, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			err = n.Open()
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("Open took %v with the %s port taken; want under 2s", took, tc.listener)
			}
			var le *ListenError
			if !errors.As(err, &le) || le.Listener != tc.listener || le.Flag != tc.flag || !errors.Is(err, syscall.EADDRINUSE) {
				t.Fatalf("Open: %v; want a *ListenError for %s (%s) wrapping EADDRINUSE", err, tc.listener, tc.flag)
			}
			if err := n.Close(); err != nil {
				t.Fatalf("Close after a failed Open: %v", err)
			}
			if n.Close() != nil {
				t.Fatal("second Close failed")
			}
		})
	}
}
