package node

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/meshops"
	"github.com/harn-dev/harn/node/roster"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/raftstore"
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
		cfg.Logger = raftstore.TestLogger(t, slog.LevelInfo).With("node", cfg.Name)
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
	c.stableLeader(t)
	return c
}

// clusterWait bounds the waits of the cluster tests. It is generous: on a
// loaded machine under the race detector an election can take several
// rounds, and a wait that ends early fails a test that would have passed.
const clusterWait = 60 * time.Second

// stableLeader waits (bounded) until every open node knows the same
// registry leader, and returns its name.
func (c *cbCluster) stableLeader(t *testing.T) string {
	t.Helper()
	var leader string
	waitFor(t, clusterWait, "a registry leader known to every node", func() bool {
		leader = ""
		for i, n := range c.nodes {
			if c.closed[i] {
				continue
			}
			id, _ := n.cl.Registry().Leader()
			if id == "" || (leader != "" && id != leader) {
				return false
			}
			leader = id
		}
		return leader != ""
	})
	return leader
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

func rosterState(n *Node, session string) (roster.Entry, bool) {
	es, _, err := n.roster.List(context.Background(), true, false, true)
	if err != nil {
		return roster.Entry{}, false
	}
	for _, e := range es {
		if e.State().SessionID == session {
			return e, true
		}
	}
	return roster.Entry{}, false
}

func TestPresenceReachesEveryNode(t *testing.T) {
	c := startTestCluster(t, 3, "local")
	now := time.Now()
	mustIngest(t, c.nodes[0], presence.Event{SessionID: "p1", Type: presence.TypeSessionStart, TS: now},
		presence.Event{SessionID: "p1", Type: presence.TypeInputRequested, TS: now.Add(time.Millisecond)})
	for _, n := range c.nodes[1:] {
		waitFor(t, clusterWait, "needs_input on "+n.Name(), func() bool {
			e, ok := rosterState(n, "p1")
			return ok && e.State().Activity == presence.ActivityNeedsInput && e.Reachable && e.State().Node == c.nodes[0].Name()
		})
	}
}

func TestMissedDeltaRepairedByDigestPull(t *testing.T) {
	// The LAN profile's push/pull runs every 30 s: a repair within the
	// bound below can only come from the digest pull, which follows a
	// change of the node's presence.
	c := startTestCluster(t, 3, "lan")
	now := time.Now()
	mustIngest(t, c.nodes[0], presence.Event{SessionID: "m1", Type: presence.TypeUserPromptSubmit, TS: now})
	for _, n := range c.nodes[1:] {
		waitFor(t, clusterWait, "m1 on "+n.Name(), func() bool { _, ok := n.remote.Get(c.nodes[0].Name(), "m1"); return ok })
	}
	// Steady state: every node holds for every peer exactly the digest
	// that peer gossips, so a digest that arrives starts no pull
	// (checkDigest returns before pulling when they are equal).
	waitFor(t, clusterWait, "the digests to agree", func() bool {
		for _, from := range c.nodes {
			want := clusterLocal{from}.LocalDigest()
			for _, n := range c.nodes {
				if n != from && n.remote.Digest(from.Name()) != want {
					return false
				}
			}
		}
		return true
	})
	// Node 1 misses a delta: its copy of m1 is lost. The digests that
	// follow node 0's next change (of another session) show it.
	before := c.nodes[1].cl.Parts().Pulls
	r := c.nodes[1].remote
	r.Forget(c.nodes[0].Name(), "m1")
	mustIngest(t, c.nodes[0], presence.Event{SessionID: "m2", Type: presence.TypeUserPromptSubmit, TS: now.Add(time.Second)})
	waitFor(t, clusterWait, "the digest pull to restore m1", func() bool {
		_, ok := r.Get(c.nodes[0].Name(), "m1")
		return ok
	})
	if c.nodes[1].cl.Parts().Pulls == before {
		t.Fatal("m1 came back without a pull")
	}
}

func TestLifecycleFromNonLeaderIsInEveryReplica(t *testing.T) {
	c := startTestCluster(t, 3, "local")
	leader := c.stableLeader(t)
	var follower *Node
	for _, n := range c.nodes {
		if n.Name() != leader {
			follower = n
			break
		}
	}
	mustIngest(t, follower, presence.Event{SessionID: "l1", Type: presence.TypeSessionStart, TS: time.Now()})
	term := follower.cl.Parts().Store.Stats().Term
	res, err := follower.decl.Lifecycle(context.Background(), "l1", presence.TaskBlocked, "waiting on review")
	if err != nil || !res.Recorded {
		t.Fatalf("lifecycle: %+v %v", res, err)
	}
	// The write is synchronous through the leader. Only an election
	// during the call (a new term) may leave it pending, and then the
	// registry writer retries it in the background.
	if res.Note != "" {
		if now := follower.cl.Parts().Store.Stats().Term; now == term {
			t.Fatalf("lifecycle pending with a steady leader (term %d): %s", term, res.Note)
		}
		t.Logf("an election ran during the call; the write was left to the background: %s", res.Note)
	}
	for _, n := range c.nodes {
		waitFor(t, clusterWait, "the record on "+n.Name(), func() bool {
			r, ok := n.cl.Registry().Get("l1")
			return ok && r.TaskState == "blocked" && r.BlockerReason == "waiting on review" && r.Node == follower.Name()
		})
	}
}

// harn mesh remove: a dead server is taken out of the registry's Raft
// configuration explicitly, from any node (forwarded to the leader).
func TestRemoveDeadServer(t *testing.T) {
	c := startTestCluster(t, 3, "local")
	waitFor(t, clusterWait, "three voters", func() bool {
		st, err := raftOf(c.nodes[0])
		return err == nil && len(st.Servers) == 3
	})
	dead := c.nodes[2]
	dead.Close()
	c.closed[2] = true
	leader, _ := c.nodes[0].cl.Registry().Leader()
	from := c.nodes[0]
	if leader == from.Name() {
		from = c.nodes[1]
	}
	waitFor(t, clusterWait, "a leader among the living", func() bool {
		id, _ := from.cl.Registry().Leader()
		return id != "" && id != dead.Name()
	})
	// Removing is idempotent: retry while the living elect a leader.
	var err error
	waitFor(t, clusterWait, "the remove to reach a leader", func() bool {
		err = from.cl.RemoveServer(context.Background(), dead.Name())
		return !errors.Is(err, ErrNoLeader)
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, clusterWait, "the dead server out of the configuration", func() bool {
		st, err := raftOf(from)
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

// raftOf is n's view of the registry's raft state (node/meshops).
func raftOf(n *Node) (RaftView, error) {
	if n.cl == nil {
		return RaftView{}, ErrNoMesh
	}
	return meshops.Raft(n.cl), nil
}
