package e2e

import (
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestNodeExitsWhenAPortIsTaken: with any of its listeners' ports taken,
// `harn node` exits 9 within 2 s, printing one line that names the
// address, the flag that moves it and the exit code.
func TestNodeExitsWhenAPortIsTaken(t *testing.T) {
	for _, flag := range []string{"--gossip-port", "--raft-port", "--rpc-port", "--http-port"} {
		t.Run(strings.TrimPrefix(flag, "--"), func(t *testing.T) {
			m := newMeshNode(t, "taken")
			addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePorts(t, 1)[0]))
			l, err := net.Listen("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			u, err := net.ListenPacket("udp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer u.Close()
			_, port, _ := net.SplitHostPort(addr)
			args := append([]string{"node", "--data-dir", m.dataDir, "--socket", m.socket}, m.nodeArgs()...)
			args = append(args, flag, port, "--log-level", "error")
			start := time.Now()
			r := runFor(t, 20*time.Second, m.base, args...)
			took := time.Since(start)
			if r.code != 9 {
				t.Fatalf("exit %d, want 9: %v", r.code, r)
			}
			if took > 2*time.Second {
				t.Errorf("harn node took %v to exit with %s taken; want at most 2s", took, flag)
			}
			line := strings.TrimSuffix(r.stderr, "\n")
			if strings.Contains(line, "\n") || !strings.HasPrefix(line, "harn: ") ||
				!strings.Contains(line, addr) || !strings.Contains(line, flag) || !strings.Contains(line, "exit 9") {
				t.Errorf("stderr %q: want one line naming %s, %s and exit 9", r.stderr, addr, flag)
			}
		})
	}
}

// TestNodeNamesEveryBusyPortInOneLine: with its gossip, raft and board
// ports taken, `harn node` exits 9 with one line that names each busy
// address with the flag that moves it, not one per try; the free rpc
// port is not named.
func TestNodeNamesEveryBusyPortInOneLine(t *testing.T) {
	m := newMeshNode(t, "busy")
	hp := freePorts(t, 1)[0]
	var held []string
	for _, p := range []int{m.gossip, m.raft, hp} {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		held = append(held, addr)
	}
	args := append([]string{"node", "--data-dir", m.dataDir, "--socket", m.socket}, m.nodeArgs()...)
	args = append(args, "--http-port", strconv.Itoa(hp), "--log-level", "error")
	r := runFor(t, 20*time.Second, m.base, args...)
	if r.code != 9 {
		t.Fatalf("exit %d, want 9: %v", r.code, r)
	}
	line := strings.TrimSuffix(r.stderr, "\n")
	if strings.Contains(line, "\n") || !strings.Contains(line, "exit 9") {
		t.Fatalf("stderr %q: want one line with exit 9", r.stderr)
	}
	for i, flag := range []string{"--gossip-port", "--raft-port", "--http-port"} {
		if !strings.Contains(line, held[i]+" ("+flag+")") {
			t.Errorf("stderr %q does not name %s with %s", line, held[i], flag)
		}
	}
	if strings.Contains(line, "--rpc-port") {
		t.Errorf("stderr %q names the free rpc port", line)
	}
}

// TestNodeStopsOnSIGTERMWhileJoining: a node that cannot reach its seed
// (no leader, still joining) stops within 5 s of SIGTERM.
func TestNodeStopsOnSIGTERMWhileJoining(t *testing.T) {
	seed := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePorts(t, 1)[0])) // nobody there
	m := newMeshNode(t, "lonely", "--insecure-mesh", "--join", seed)
	m.spawn()
	m.ready()
	start := time.Now()
	m.proc.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.proc.done:
	case <-time.After(10 * time.Second):
		t.Fatal("harn node ignored SIGTERM for 10s while joining")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("harn node took %v to stop on SIGTERM while joining; want at most 5s", took)
	}
}
