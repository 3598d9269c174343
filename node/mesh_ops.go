package node

import (
	"context"
	"errors"
	"time"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/raftstore"
)

// MemberView is wire.MemberView.
type MemberView = wire.MemberView

// Members lists the mesh's members, dead and departed ones included.
func (n *Node) Members() ([]MemberView, error) {
	if n.cl == nil {
		return nil, ErrNoMesh
	}
	var out []MemberView
	for _, m := range n.cl.Members() {
		v := MemberView{Name: m.Name, Addr: m.Address(), Status: string(m.Status), Role: string(m.Meta.Role),
			RPC: m.Meta.RPCAddr, Raft: m.Meta.RaftAddr}
		if !m.Since.IsZero() {
			v.Since = m.Since.UTC().Format(time.RFC3339)
		}
		out = append(out, v)
	}
	return out, nil
}

// markStale is the raft configuration with each server's address checked
// against the raft address it advertises in the mesh: a server whose
// entry differs is stale (peers dial it where it no longer listens). A
// server the mesh does not know (or that advertises no raft address) is
// not judged.
func markStale(servers []raftstore.Server, members []MemberView) []wire.RaftServer {
	advertised := make(map[string]string, len(members))
	for _, m := range members {
		if m.Raft != "" {
			advertised[m.Name] = m.Raft
		}
	}
	out := make([]wire.RaftServer, 0, len(servers))
	for _, sv := range servers {
		v := wire.RaftServer{Server: sv}
		if adv, ok := advertised[sv.ID]; ok && adv != sv.Addr {
			v.Advertises, v.Stale = adv, true
		}
		out = append(out, v)
	}
	return out
}

// RaftView is wire.RaftView.
type RaftView = wire.RaftView

// RaftStats reports the registry's Raft state as this node sees it.
func (n *Node) RaftStats() (RaftView, error) {
	if n.cl == nil {
		return RaftView{}, ErrNoMesh
	}
	st := n.cl.RaftStats()
	ms, _ := n.Members()
	v := RaftView{Leader: st.LeaderID, Term: st.Term, CommitIndex: st.CommitIndex, Applied: st.AppliedIndex,
		State: st.State, Servers: markStale(st.Servers, ms), Stale: st.Read.Stale}
	if st.Read.LastContact >= 0 {
		v.LastContact = st.Read.LastContact.Round(time.Millisecond).String()
	}
	return v, nil
}

// Leave leaves the mesh gracefully: a server first leaves the registry's
// Raft configuration (so that its absence costs no quorum), then the others
// see this node as left, not dead. The node goes on serving its local
// socket; stop it afterwards.
func (n *Node) Leave() error {
	return n.LeaveWithin(2*time.Second + 10*time.Second + 5*time.Second)
}

// LeaveWithin is Leave bounded by budget in all: each step gets at most
// what is left of it.
func (n *Node) LeaveWithin(budget time.Duration) error {
	if n.cl == nil {
		return ErrNoMesh
	}
	deadline := n.cfg.Clock.Now().Add(budget)
	left := func(max time.Duration) time.Duration {
		return min(max, deadline.Sub(n.cfg.Clock.Now()))
	}
	// Tell the leader's reconciler first, so that it does not add this
	// node back between its removal and its leave.
	if err := n.cl.AnnounceLeaving(left(2 * time.Second)); err != nil {
		n.log.Warn("leave: could not announce leaving", "err", err)
	}
	if servers, err := n.cl.RaftServers(); err == nil && len(servers) > 1 {
		for _, s := range servers {
			if s.ID != n.cfg.Name {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), left(10*time.Second))
			err := n.RemoveServer(ctx, n.cfg.Name)
			cancel()
			if err != nil {
				n.log.Warn("leave: could not leave the registry configuration", "err", err)
			}
		}
	}
	err := n.cl.LeaveMesh(max(left(5*time.Second), 100*time.Millisecond))
	if errors.Is(err, mesh.ErrShutdown) {
		return nil
	}
	return err
}

// RemoveServer removes a (dead) server from the Raft configuration, on
// the leader (forwarded when this node does not lead). It retries while
// leadership moves, within ctx.
func (n *Node) RemoveServer(ctx context.Context, id string) error {
	if n.cl == nil {
		return ErrNoMesh
	}
	return n.cl.RemoveServer(ctx, id)
}
