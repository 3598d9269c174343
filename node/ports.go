package node

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/harn-dev/harn/node/layout"
)

// PortsError says that several of the node's ports cannot be bound: each
// with its address and the flag that moves it, in one line. errors.As
// finds each *ListenError in it.
type PortsError struct {
	Busy []*ListenError
}

func (e *PortsError) Error() string {
	parts := make([]string, 0, len(e.Busy))
	inUse := true
	for _, le := range e.Busy {
		p := fmt.Sprintf("%s %s (%s)", le.Listener, le.Addr, le.Flag)
		if !layout.IsAddrInUse(le.Err) {
			inUse = false
			p = fmt.Sprintf("%s %s (%v; %s)", le.Listener, le.Addr, le.Err, le.Flag)
		}
		parts = append(parts, p)
	}
	what := "cannot listen on"
	if inUse {
		what = "ports in use:"
	}
	return fmt.Sprintf("node: %s %s; free them or pass other ports with those flags", what, strings.Join(parts, ", "))
}

// Unwrap returns each port's error.
func (e *PortsError) Unwrap() []error {
	out := make([]error, len(e.Busy))
	for i, le := range e.Busy {
		out[i] = le
	}
	return out
}

// portProbe is one port the node listens on: gossip listens on UDP too.
type portProbe struct {
	listener, flag, host string
	port                 int
	udp                  bool
}

// probes are the node's ports, as open binds them; a port of 0 is picked
// at bind time and cannot be taken.
func probes(cfg Config) []portProbe {
	var out []portProbe
	if cc := cfg.Cluster; cc.Enabled {
		bind := cc.BindAddr()
		out = append(out, portProbe{"gossip", "--gossip-port", bind, cc.GossipPort, true})
		if cc.RaftMember() { // only servers and read replicas listen for raft
			out = append(out, portProbe{"raft", "--raft-port", bind, cc.RaftPort, false})
		}
		out = append(out, portProbe{"rpc", "--rpc-port", bind, cc.RPCPort, false})
	}
	if cfg.HTTPAddr != "" {
		if h, p, err := net.SplitHostPort(cfg.HTTPAddr); err == nil {
			port, _ := strconv.Atoi(p)
			out = append(out, portProbe{"http", "--http-port", h, port, false})
		}
	}
	return out
}

// checkPorts binds each of the node's ports for a moment, before anything
// opens, so that a start among busy ports names every one of them at once
// (a *ListenError for one, a *PortsError for several) instead of one per
// try. A port taken between this check and its bind still fails there.
func (n *Node) checkPorts() error {
	var busy []*ListenError
	for _, p := range probes(n.cfg) {
		if p.port <= 0 {
			continue
		}
		addr := net.JoinHostPort(p.host, strconv.Itoa(p.port))
		err := tryBind("tcp", addr)
		if err == nil && p.udp {
			err = tryBind("udp", addr)
		}
		if err != nil {
			busy = append(busy, &ListenError{Listener: p.listener, Addr: addr, Flag: p.flag, Err: err})
		}
	}
	switch len(busy) {
	case 0:
		return nil
	case 1:
		return busy[0]
	}
	return &PortsError{Busy: busy}
}

// tryBind binds addr on network nw and lets it go.
func tryBind(nw, addr string) error {
	if nw == "udp" {
		c, err := net.ListenPacket(nw, addr)
		if err != nil {
			return unwrapOp(err)
		}
		return c.Close()
	}
	l, err := net.Listen(nw, addr)
	if err != nil {
		return unwrapOp(err)
	}
	return l.Close()
}

// unwrapOp is the cause under a *net.OpError ("bind: address already in
// use"), which the message names with its own address.
func unwrapOp(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err
	}
	return err
}
