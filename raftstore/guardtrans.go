package raftstore

import (
	"sync"

	"github.com/hashicorp/raft"
)

// guardedTransport is raft's network transport with a gate on its heartbeat
// fast path. Raft runs heartbeats on the transport's connection goroutines,
// outside its own loop, so a heartbeat that passed raft's shutdown check can
// still write the current term after Shutdown returned: with the bolt store
// closed under it, raft panics ("failed to save current term: database not
// open", hashicorp/raft#717). Close quiesces the gate after Shutdown and
// before it closes the stores: it waits for a heartbeat in flight and
// refuses every later one.
type guardedTransport struct {
	*raft.NetworkTransport
	mu     sync.RWMutex
	closed bool
}

var _ raft.Transport = (*guardedTransport)(nil)

// SetHeartbeatHandler installs cb behind the gate.
func (g *guardedTransport) SetHeartbeatHandler(cb func(rpc raft.RPC)) {
	if cb == nil {
		g.NetworkTransport.SetHeartbeatHandler(nil)
		return
	}
	g.NetworkTransport.SetHeartbeatHandler(g.gate(cb))
}

// gate wraps raft's heartbeat handler cb.
func (g *guardedTransport) gate(cb func(rpc raft.RPC)) func(rpc raft.RPC) {
	return func(rpc raft.RPC) {
		g.mu.RLock()
		defer g.mu.RUnlock()
		if g.closed {
			rpc.Respond(nil, raft.ErrTransportShutdown)
			return
		}
		cb(rpc)
	}
}

// quiesce waits for the heartbeat in flight, if any, and refuses every
// later one. It is safe to call twice.
func (g *guardedTransport) quiesce() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}
