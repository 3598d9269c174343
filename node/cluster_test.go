package node

import (
	"context"
	"testing"
	"time"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/presence"
)

// startTestCluster opens n servers (bootstrap-expect n) with the fast
// raft profile and the given mesh profile, joined to node 0.
func startTestCluster(t *testing.T, n int, meshProfile mesh.Profile) *cbCluster {
	t.Helper()
	base := t.TempDir()
	c := &cbCluster{tb: t, nodes: make([]*Node, n), closed: make([]bool, n), socks: make([]string, n)}
	t.Cleanup(c.Close)
	open := func(i int, join string) {
		cfg, sock := cbConfig(t, base, i, n, join)
		c.socks[i] = sock
		cfg.Cluster.MeshProfile, cfg.Cluster.RaftProfile = meshProfile, "fast"
		cfg.Cluster.PresenceRefresh = 100 * time.Millisecond
		cfg.Cluster.ActivityFlush = 100 * time.Millisecond
		nd, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := nd.Open(); err != nil {
			t.Fatal(err)
		}
		c.nodes[i] = nd
	}
	open(0, "")
	for i := 1; i < n; i++ {
		open(i, c.nodes[0].MeshAddr())
	}
	waitFor(t, 15*time.Second, "a registry leader", func() bool {
		id, _ := c.nodes[0].cl.store.Leader()
		return id != ""
	})
	return c
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for i := 0; ; i++ {
		if cond() {
			return
		}
		if time.Now().After(deadline) || i > 100000 {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func rosterState(n *Node, session string) (RosterEntry, bool) {
	es, _, err := n.Roster(context.Background(), true, false)
	if err != nil {
		return RosterEntry{}, false
	}
	for _, e := range es {
		if e.State.SessionID == session {
			return e, true
		}
	}
	return RosterEntry{}, false
}

func TestPresenceReachesEveryNode(t *testing.T) {
	c := startTestCluster(t, 3, "local")
	now := time.Now()
	mustIngest(t, c.nodes[0], presence.Event{SessionID: "p1", Type: presence.TypeSessionStart, TS: now},
		presence.Event{SessionID: "p1", Type: presence.TypeInputRequested, TS: now.Add(time.Millisecond)})
	for _, n := range c.nodes[1:] {
		waitFor(t, 5*time.Second, "needs_input on "+n.Name(), func() bool {
			e, ok := rosterState(n, "p1")
			return ok && e.State.Activity == presence.ActivityNeedsInput && e.Reachable && e.State.Node == c.nodes[0].Name()
		})
	}
}

func TestMissedDeltaRepairedByDigestPull(t *testing.T) {
	// The LAN profile's push/pull runs every 30 s: a repair within the
	// bound below can only come from the digest pull.
	c := startTestCluster(t, 3, "lan")
	now := time.Now()
	mustIngest(t, c.nodes[0], presence.Event{SessionID: "m1", Type: presence.TypeUserPromptSubmit, TS: now})
	for _, n := range c.nodes[1:] {
		waitFor(t, 5*time.Second, "m1 on "+n.Name(), func() bool { _, ok := n.remote.Get(c.nodes[0].Name(), "m1"); return ok })
	}
	// Steady state: the digests agree, so nobody pulls.
	time.Sleep(300 * time.Millisecond)
	before := make([]int64, len(c.nodes))
	for i, n := range c.nodes {
		before[i] = n.cl.pulls.Load()
	}
	time.Sleep(600 * time.Millisecond)
	for i, n := range c.nodes {
		if got := n.cl.pulls.Load(); got != before[i] {
			t.Fatalf("%s pulled %d times in steady state", n.Name(), got-before[i])
		}
	}
	// Node 1 misses a delta: its copy of m1 is lost.
	r := c.nodes[1].remote
	r.Forget(c.nodes[0].Name(), "m1")
	waitFor(t, 2*time.Second, "the digest pull to restore m1", func() bool {
		_, ok := r.Get(c.nodes[0].Name(), "m1")
		return ok
	})
	if c.nodes[1].cl.pulls.Load() == before[1] {
		t.Fatal("m1 came back without a pull")
	}
}

func TestLifecycleFromNonLeaderIsInEveryReplica(t *testing.T) {
	c := startTestCluster(t, 3, "local")
	leader, _ := c.nodes[0].cl.store.Leader()
	var follower *Node
	for _, n := range c.nodes {
		if n.Name() != leader {
			follower = n
			break
		}
	}
	mustIngest(t, follower, presence.Event{SessionID: "l1", Type: presence.TypeSessionStart, TS: time.Now()})
	res, err := follower.Lifecycle(context.Background(), "l1", presence.TaskBlocked, "waiting on review")
	if err != nil || !res.Recorded || res.Note != "" {
		t.Fatalf("lifecycle: %+v %v", res, err)
	}
	for _, n := range c.nodes {
		waitFor(t, 5*time.Second, "the record on "+n.Name(), func() bool {
			r, ok := n.cl.store.Get("l1")
			return ok && r.TaskState == "blocked" && r.BlockerReason == "waiting on review" && r.Node == follower.Name()
		})
	}
}

// harn mesh remove: a dead server is taken out of the registry's Raft
// configuration explicitly, from any node (forwarded to the leader).
func TestRemoveDeadServer(t *testing.T) {
	c := startTestCluster(t, 3, "local")
	waitFor(t, 10*time.Second, "three voters", func() bool {
		st, err := c.nodes[0].RaftStats()
		return err == nil && len(st.Servers) == 3
	})
	dead := c.nodes[2]
	dead.Close()
	c.closed[2] = true
	leader, _ := c.nodes[0].cl.store.Leader()
	from := c.nodes[0]
	if leader == from.Name() {
		from = c.nodes[1]
	}
	waitFor(t, 10*time.Second, "a leader among the living", func() bool {
		id, _ := from.cl.store.Leader()
		return id != "" && id != dead.Name()
	})
	if err := from.RemoveServer(context.Background(), dead.Name()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the dead server out of the configuration", func() bool {
		st, err := from.RaftStats()
		if err != nil || len(st.Servers) != 2 {
			return false
		}
		for _, s := range st.Servers {
			if s.ID == dead.Name() {
				return false
			}
		}
		return true
	})
}
