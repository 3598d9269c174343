package meshops

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/raftstore"
	"github.com/harn-dev/harn/util/clock"
)

// fakeMesh is the seam Mesh, recording the calls of a leave.
type fakeMesh struct {
	members []mesh.Member
	stats   raftstore.Stats
	calls   []string
	leave   error
	budgets []time.Duration
}

func (f *fakeMesh) Members() []mesh.Member     { return f.members }
func (f *fakeMesh) RaftStats() raftstore.Stats { return f.stats }
func (f *fakeMesh) WatchSource() string        { return "" }
func (f *fakeMesh) AnnounceLeaving(d time.Duration) error {
	f.calls, f.budgets = append(f.calls, "announce"), append(f.budgets, d)
	return nil
}
func (f *fakeMesh) RaftServers() ([]raftstore.Server, error) { return f.stats.Servers, nil }
func (f *fakeMesh) LeaveMesh(d time.Duration) error {
	f.calls, f.budgets = append(f.calls, "leave"), append(f.budgets, d)
	return f.leave
}
func (f *fakeMesh) RemoveServer(ctx context.Context, id string) error {
	f.calls = append(f.calls, "remove "+id)
	return nil
}

var errNoMesh = errors.New("no mesh")

// TestMeshLocalWithoutTheMeshIsNoMesh: on a node without the mesh each
// call answers the NoMesh error through ErrStatus.
func TestMeshLocalWithoutTheMeshIsNoMesh(t *testing.T) {
	s := &MeshLocal{Node: "a", Mesh: func() Mesh { return nil }, NoMesh: errNoMesh, ErrStatus: func(err error) error { return err }}
	ctx := context.Background()
	if _, err := s.Members(ctx, nil); !errors.Is(err, errNoMesh) {
		t.Errorf("Members: %v", err)
	}
	if _, err := s.Raft(ctx, nil); !errors.Is(err, errNoMesh) {
		t.Errorf("Raft: %v", err)
	}
	if _, err := s.Leave(ctx, nil); !errors.Is(err, errNoMesh) {
		t.Errorf("Leave: %v", err)
	}
	if _, err := s.RemoveServer(ctx, nil); !errors.Is(err, errNoMesh) {
		t.Errorf("RemoveServer: %v", err)
	}
}

// TestLeaveLeavesTheRaftConfigurationBeforeTheMesh: a server announces
// its leave, leaves the registry's configuration, then the mesh; a mesh
// already shut down is a leave done; each step gets at most what is left
// of the budget.
func TestLeaveLeavesTheRaftConfigurationBeforeTheMesh(t *testing.T) {
	f := &fakeMesh{leave: mesh.ErrShutdown, stats: raftstore.Stats{Servers: []raftstore.Server{{ID: "a"}, {ID: "b"}}}}
	clk := clock.NewFake(time.Unix(1e9, 0))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if err := LeaveWithin(f, "a", clk, log, time.Second); err != nil {
		t.Fatal(err)
	}
	if want := []string{"announce", "remove a", "leave"}; !slices.Equal(f.calls, want) {
		t.Fatalf("calls %v, want %v", f.calls, want)
	}
	for _, d := range f.budgets {
		if d > time.Second {
			t.Errorf("a step got %v of a 1s budget", d)
		}
	}
	// A lone server does not leave its own configuration.
	f = &fakeMesh{stats: raftstore.Stats{Servers: []raftstore.Server{{ID: "a"}}}}
	if err := LeaveWithin(f, "a", clk, log, LeaveBudget); err != nil {
		t.Fatal(err)
	}
	if want := []string{"announce", "leave"}; !slices.Equal(f.calls, want) {
		t.Fatalf("lone server: calls %v, want %v", f.calls, want)
	}
}

// TestDoctorRaftQuorumIsAMajorityOfVoters: quorum holds with a leader and
// more than half the voters alive; half is not enough.
func TestDoctorRaftQuorumIsAMajorityOfVoters(t *testing.T) {
	voters := []raftstore.Server{{ID: "a", Voter: true}, {ID: "b", Voter: true}, {ID: "c", Voter: true}, {ID: "d", Voter: true}}
	for _, tc := range []struct {
		alive  []string
		leader string
		quorum bool
	}{
		{[]string{"b", "c"}, "a", true}, // a (this node) + b + c = 3 of 4
		{[]string{"b"}, "a", false},     // 2 of 4 is half, not a majority
		{[]string{"b", "c"}, "", false}, // no leader
	} {
		f := &fakeMesh{stats: raftstore.Stats{LeaderID: tc.leader, Servers: voters, Read: raftstore.ReadInfo{LastContact: -1}}}
		for _, name := range tc.alive {
			f.members = append(f.members, mesh.Member{Name: name, Status: mesh.StatusAlive})
		}
		v := DoctorRaft(f, "a")
		if v.Quorum != tc.quorum || v.Voters != 4 || !v.Voter {
			t.Errorf("alive %v leader %q: %+v, want quorum %v", tc.alive, tc.leader, v, tc.quorum)
		}
	}
}
