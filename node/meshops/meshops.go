// Package meshops is the mesh operations room: what a person asks of the
// node's mesh through the local socket — its members, the registry's raft
// state (with the stale peer addresses and the quorum `harn doctor`
// judges), leaving the mesh and removing a dead server from the raft
// configuration. It reads the mesh through Mesh, declared here and given
// by the node (node/cluster's Cluster); it answers its part of the local
// server interface (api.LocalServer) as MeshLocal.
package meshops

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/raftstore"
	"github.com/harn-dev/harn/util/clock"
)

// Mesh is what the room needs of the node's cluster.
type Mesh interface {
	Members() []mesh.Member
	RaftStats() raftstore.Stats
	WatchSource() string
	AnnounceLeaving(timeout time.Duration) error
	RaftServers() ([]raftstore.Server, error)
	LeaveMesh(timeout time.Duration) error
	RemoveServer(ctx context.Context, id string) error
}

// Members lists the mesh's members, dead and departed ones included.
func Members(m Mesh) []wire.MemberView {
	var out []wire.MemberView
	for _, mb := range m.Members() {
		v := wire.MemberView{Name: mb.Name, Addr: mb.Address(), Status: string(mb.Status), Role: string(mb.Meta.Role),
			RPC: mb.Meta.RPCAddr, Raft: mb.Meta.RaftAddr}
		if !mb.Since.IsZero() {
			v.Since = mb.Since.UTC().Format(time.RFC3339)
		}
		out = append(out, v)
	}
	return out
}

// markStale is the raft configuration with each server's address checked
// against the raft address it advertises in the mesh: a server whose
// entry differs is stale (peers dial it where it no longer listens). A
// server the mesh does not know (or that advertises no raft address) is
// not judged.
func markStale(servers []raftstore.Server, members []wire.MemberView) []wire.RaftServer {
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

// Raft reports the registry's Raft state as this node sees it.
func Raft(m Mesh) wire.RaftView {
	st := m.RaftStats()
	v := wire.RaftView{Leader: st.LeaderID, Term: st.Term, CommitIndex: st.CommitIndex, Applied: st.AppliedIndex,
		State: st.State, Servers: markStale(st.Servers, Members(m)), Stale: st.Read.Stale}
	if st.Read.LastContact >= 0 {
		v.LastContact = st.Read.LastContact.Round(time.Millisecond).String()
	}
	return v
}

// DoctorRaft is the registry's raft state with what a person must act on:
// no leader, no quorum, a peer whose configured address is stale. node is
// this node's name.
func DoctorRaft(m Mesh, node string) *api.DoctorRaft {
	st := Raft(m)
	v := &api.DoctorRaft{Leader: st.Leader, State: st.State, Watch: m.WatchSource(), Stale: st.Stale,
		LastContact: st.LastContact}
	alive := map[string]bool{node: true}
	for _, mb := range Members(m) {
		if mb.Status == "alive" {
			alive[mb.Name] = true
		}
	}
	v.Members = int32(len(alive))
	for _, sv := range st.Servers { // Raft marked the stale ones
		if sv.Voter {
			v.Voters++
			if alive[sv.ID] {
				v.Alive++
			}
			if sv.ID == node {
				v.Voter = true
			}
		}
		if sv.Stale {
			v.StalePeers = append(v.StalePeers, sv.ID+": "+sv.Addr+" (advertises "+sv.Advertises+")")
		}
	}
	v.Quorum = v.Voters > 0 && v.Alive > v.Voters/2 && st.Leader != ""
	return v
}

// LeaveBudget bounds a graceful leave in all: announcing it, leaving the
// raft configuration, leaving the mesh.
const LeaveBudget = 2*time.Second + 10*time.Second + 5*time.Second

// LeaveWithin leaves the mesh gracefully, bounded by budget in all (each
// step gets at most what is left of it): a server first leaves the
// registry's Raft configuration (so that its absence costs no quorum),
// then the others see this node (named node) as left, not dead.
func LeaveWithin(m Mesh, node string, clk clock.Clock, log *slog.Logger, budget time.Duration) error {
	deadline := clk.Now().Add(budget)
	left := func(max time.Duration) time.Duration {
		return min(max, deadline.Sub(clk.Now()))
	}
	// Tell the leader's reconciler first, so that it does not add this
	// node back between its removal and its leave.
	if err := m.AnnounceLeaving(left(2 * time.Second)); err != nil {
		log.Warn("leave: could not announce leaving", "err", err)
	}
	if servers, err := m.RaftServers(); err == nil && len(servers) > 1 {
		for _, s := range servers {
			if s.ID != node {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), left(10*time.Second))
			err := m.RemoveServer(ctx, node)
			cancel()
			if err != nil {
				log.Warn("leave: could not leave the registry configuration", "err", err)
			}
		}
	}
	err := m.LeaveMesh(max(left(5*time.Second), 100*time.Millisecond))
	if errors.Is(err, mesh.ErrShutdown) {
		return nil
	}
	return err
}

// MeshLocal is the room's part of the local server (api.LocalServer).
type MeshLocal struct {
	Node  string
	Clock clock.Clock
	Log   *slog.Logger
	// Mesh is the node's cluster, nil without the mesh.
	Mesh func() Mesh
	// NoMesh is the error of a call on a node without the mesh.
	NoMesh error
	// ErrStatus maps the node's errors to the RPC's status.
	ErrStatus func(error) error
}

func (s *MeshLocal) mesh() (Mesh, error) {
	if m := s.Mesh(); m != nil {
		return m, nil
	}
	return nil, s.ErrStatus(s.NoMesh)
}

// Members lists the mesh's members.
func (s *MeshLocal) Members(ctx context.Context, _ *api.MeshRequest) (*api.MembersResponse, error) {
	m, err := s.mesh()
	if err != nil {
		return nil, err
	}
	out := &api.MembersResponse{}
	for _, v := range Members(m) {
		out.Members = append(out.Members, wire.MemberToAPI(v))
	}
	return out, nil
}

// Raft reports the registry's raft state.
func (s *MeshLocal) Raft(ctx context.Context, _ *api.MeshRequest) (*api.RaftResponse, error) {
	m, err := s.mesh()
	if err != nil {
		return nil, err
	}
	return &api.RaftResponse{Stats: wire.RaftToAPI(Raft(m))}, nil
}

// Leave leaves the mesh gracefully within LeaveBudget. The node goes on
// serving its local socket; stop it afterwards.
func (s *MeshLocal) Leave(ctx context.Context, _ *api.MeshRequest) (*api.LeaveResponse, error) {
	m, err := s.mesh()
	if err != nil {
		return nil, err
	}
	if err := LeaveWithin(m, s.Node, s.Clock, s.Log, LeaveBudget); err != nil {
		return nil, s.ErrStatus(err)
	}
	return &api.LeaveResponse{}, nil
}

// RemoveServer removes a (dead) server from the Raft configuration, on
// the leader (forwarded when this node does not lead). It retries while
// leadership moves, within ctx.
func (s *MeshLocal) RemoveServer(ctx context.Context, req *api.RemoveServerRequest) (*api.RemoveServerResponse, error) {
	m, err := s.mesh()
	if err != nil {
		return nil, err
	}
	if err := m.RemoveServer(ctx, req.Id); err != nil {
		return nil, s.ErrStatus(err)
	}
	return &api.RemoveServerResponse{}, nil
}
