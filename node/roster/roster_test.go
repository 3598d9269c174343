package roster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/apigrpc"
	"github.com/harn-dev/harn/node/gossip"
	"github.com/harn-dev/harn/node/sessions"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/raftstore"
	"github.com/harn-dev/harn/util/clock"
)

// fakeHost is a node seen through Host: its own sessions, a mesh of
// members and a registry replica.
type fakeHost struct {
	own     []presence.State
	members []mesh.Member
	recs    []raftstore.Record
}

func (h *fakeHost) Sessions() Sessions {
	if h.own == nil {
		return nil
	}
	return fakeSessions(h.own)
}
func (h *fakeHost) Mesh() Mesh                                 { return h }
func (h *fakeHost) Registry() Registry                         { return h }
func (h *fakeHost) Ledger() Ledger                             { return nil }
func (h *fakeHost) Settle(string)                              {}
func (h *fakeHost) HarnTask(string) *api.HarnTask              { return nil }
func (h *fakeHost) HostedView(*presence.State) *api.HostedView { return nil }
func (h *fakeHost) Tasks() *tasks.Host                         { return nil }
func (h *fakeHost) Members() []mesh.Member                     { return h.members }
func (h *fakeHost) ClientOf(string) (apigrpc.ClusterClient, error) {
	return nil, errors.New("no peers here")
}
func (h *fakeHost) ConsistentRecords(context.Context) ([]raftstore.Record, raftstore.ReadInfo, error) {
	return h.recs, raftstore.ReadInfo{LeaderID: "n0"}, nil
}
func (h *fakeHost) Get(id string) (raftstore.Record, bool) {
	for _, r := range h.recs {
		if r.SessionID == id {
			return r, true
		}
	}
	return raftstore.Record{}, false
}
func (h *fakeHost) List() []raftstore.Record      { return h.recs }
func (h *fakeHost) Records() []raftstore.Record   { return h.recs }
func (h *fakeHost) Staleness() raftstore.ReadInfo { return raftstore.ReadInfo{} }

type fakeSessions []presence.State

func (s fakeSessions) Len() int { return len(s) }
func (s fakeSessions) Views(all bool, fn func(*presence.State, *sessions.View)) {
	for i := range s {
		if all || !s[i].Ended {
			fn(&s[i], nil)
		}
	}
}
func (s fakeSessions) State(id string) (presence.State, bool) {
	for _, st := range s {
		if st.SessionID == id {
			return st, true
		}
	}
	return presence.State{}, false
}
func (s fakeSessions) Resolve(handle string) (presence.State, error) {
	if st, ok := s.State(handle); ok {
		return st, nil
	}
	return presence.State{}, sessions.ErrUnknownSession
}

// TestListMergesOwnGossipAndRegistry: this node's session comes as local,
// a reachable node's as gossiped (with the registry's longer task), and
// a dead node's from the registry, unreachable since it died (its stale
// gossip is not shown); each once, in start order.
func TestListMergesOwnGossipAndRegistry(t *testing.T) {
	t0 := time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC)
	own := presence.NewState("s-own")
	own.Node, own.StartedAt, own.LastEvidenceAt = "n0", t0, t0
	died := t0.Add(-time.Minute)
	h := &fakeHost{own: []presence.State{own},
		members: []mesh.Member{{Name: "n0", Status: mesh.StatusAlive}, {Name: "n1", Status: mesh.StatusAlive},
			{Name: "n2", Status: mesh.StatusDead, Since: died}},
		recs: []raftstore.Record{{SessionID: "s-own", Node: "n0"},
			{SessionID: "s-live", Node: "n1", Task: "the whole task text", StartedAt: t0.Add(2 * time.Second)},
			{SessionID: "s-dead", Node: "n2", StartedAt: t0.Add(3 * time.Second)}}}
	remote := gossip.NewTable()
	remote.Apply("n1", 1, gossip.Entry{SessionRow: &api.SessionRow{SessionId: "s-live", Activity: "working", Task: "the whole",
		StartedAtUnixNano: api.UnixNano(t0.Add(2 * time.Second)), LastEvidenceAtUnixNano: api.UnixNano(t0)}})
	remote.Apply("n2", 1, gossip.Entry{SessionRow: &api.SessionRow{SessionId: "s-dead", Activity: "working"}})
	ro := New(Config{Name: "n0", Clock: clock.NewFake(t0), SilenceAfter: time.Hour}, h, remote)

	got, info, err := ro.List(context.Background(), false, false, true)
	if err != nil || !info.Mesh {
		t.Fatalf("list: %v %+v", err, info)
	}
	want := []struct{ id, source, node string }{{"s-own", "local", "n0"}, {"s-live", "gossip", "n1"}, {"s-dead", "registry", "n2"}}
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		e := got[i]
		if e.State().SessionID != w.id || e.Source != w.source || e.State().Node != w.node {
			t.Errorf("entry %d: %s from %s on %s, want %s from %s on %s", i, e.State().SessionID, e.Source, e.State().Node, w.id, w.source, w.node)
		}
	}
	if got[1].State().Task != "the whole task text" || !got[1].Reachable {
		t.Errorf("gossiped entry: task %q reachable %v", got[1].State().Task, got[1].Reachable)
	}
	if since := api.TimeOf(got[2].UnreachableSinceUnixNano); got[2].Reachable || !since.Equal(died) {
		t.Errorf("dead node's entry: reachable %v since %v, want unreachable since %v", got[2].Reachable, since, died)
	}
	// A consistent read is the registry's alone, sorted by id.
	got, info, err = ro.List(context.Background(), false, true, true)
	if err != nil || !info.Consistent || info.LeaderID != "n0" || len(got) != 3 || got[0].State().SessionID != "s-dead" || got[0].Source != "registry" {
		t.Fatalf("consistent list: %+v %+v %v", got, info, err)
	}
	// The owner of a session this node does not hold is named.
	var re *RemoteSessionError
	if err := ro.OwnerErr("s-live", sessions.ErrUnknownSession); !errors.As(err, &re) || re.Owner != "n1" {
		t.Errorf("owner error: %v", err)
	}
}
