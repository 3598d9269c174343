package node

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
)

// freePortTCPUDP is a port free on 127.0.0.1 for TCP and UDP.
func freePortTCPUDP(t *testing.T) int {
	t.Helper()
	for i := 0; i < 50; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if u, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p))); err == nil {
			u.Close()
			return p
		}
	}
	t.Fatal("no free port")
	return 0
}

// TestBusyPortsAreReportedAtOnce: a node whose gossip, raft and board
// ports are taken fails its start with one line naming every busy port,
// each with the flag that moves it, and a free port not at all; each
// port's *ListenError is found in it. One busy port is its ListenError.
func TestBusyPortsAreReportedAtOnce(t *testing.T) {
	g, r, rpc, h := freePortTCPUDP(t), freePortTCPUDP(t), freePortTCPUDP(t), freePortTCPUDP(t)
	hold := func(port int) {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
	}
	hold(g)
	hold(r)
	hold(h)
	n := &Node{cfg: Config{HTTPAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(h)),
		Cluster: ClusterConfig{Enabled: true, Bind: "127.0.0.1", GossipPort: g, RaftPort: r, RPCPort: rpc}}}
	err := n.checkPorts()
	var pe *PortsError
	if !errors.As(err, &pe) {
		t.Fatalf("checkPorts: %v, want a *PortsError", err)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") {
		t.Errorf("%q: want one line", msg)
	}
	for _, want := range []struct {
		port int
		flag string
	}{{g, "--gossip-port"}, {r, "--raft-port"}, {h, "--http-port"}} {
		if !strings.Contains(msg, "127.0.0.1:"+strconv.Itoa(want.port)+" ("+want.flag+")") {
			t.Errorf("%q does not name port %d with %s", msg, want.port, want.flag)
		}
	}
	if strings.Contains(msg, strconv.Itoa(rpc)) || strings.Contains(msg, "--rpc-port") {
		t.Errorf("%q names the free rpc port", msg)
	}
	var le *ListenError
	if !errors.As(err, &le) || le.Flag != "--gossip-port" {
		t.Errorf("errors.As(*ListenError) = %+v, want the gossip port's", le)
	}

	// The gossip port's UDP half alone taken.
	g2 := freePortTCPUDP(t)
	u, uerr := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(g2)))
	if uerr != nil {
		t.Fatal(uerr)
	}
	defer u.Close()
	n.cfg = Config{Cluster: ClusterConfig{Enabled: true, Bind: "127.0.0.1", GossipPort: g2}}
	err = n.checkPorts()
	if !errors.As(err, &le) || le.Flag != "--gossip-port" || errors.As(err, &pe) {
		t.Fatalf("with gossip's UDP taken: %v, want the gossip port's ListenError alone", err)
	}
	n.cfg = Config{Cluster: ClusterConfig{Enabled: true, Bind: "127.0.0.1", GossipPort: freePortTCPUDP(t)}}
	if err := n.checkPorts(); err != nil {
		t.Fatalf("free ports: %v", err)
	}
}
