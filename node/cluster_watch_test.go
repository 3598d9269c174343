package node

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/cluster"
	"github.com/harn-dev/harn/node/meshtrust"
	"github.com/harn-dev/harn/node/roster"
	"github.com/harn-dev/harn/presence"
)

// startMixedCluster opens servers servers (bootstrap-expect servers) and
// n-servers other nodes, joined to node 0, on fast timers: the other
// nodes follow the registry from a server's watch.
func startMixedCluster(t *testing.T, n, servers int) *cbCluster {
	t.Helper()
	base := t.TempDir()
	c := &cbCluster{tb: t, nodes: make([]*Node, n), closed: make([]bool, n), socks: make([]string, n)}
	t.Cleanup(c.Close)
	for i := range n {
		join := ""
		if i > 0 {
			join = c.nodes[0].MeshAddr()
		}
		cfg, sock := cbConfig(t, base, i, servers, join)
		c.socks[i] = sock
		cfg.Cluster.MeshProfile, cfg.Cluster.RaftProfile = "local", "fast"
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		cfg.Cluster.PresenceRefresh, cfg.Cluster.ActivityFlush = 100*time.Millisecond, 100*time.Millisecond
		cfg.Cluster.WatchProgress = 100 * time.Millisecond
		nd, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := nd.Open(); err != nil {
			t.Fatal(err)
		}
		c.nodes[i] = nd
	}
	waitFor(t, clusterWait, "every node to know the leader", func() bool {
		for _, nd := range c.nodes {
			if id, _ := nd.cl.Registry().Leader(); id == "" {
				return false
			}
		}
		return true
	})
	return c
}

// TestNonServerIsNotARaftMember: only servers are in the raft
// configuration; a node that is not one holds no raft log, reports the
// configuration its watch names, and says it watches.
func TestNonServerIsNotARaftMember(t *testing.T) {
	c := startMixedCluster(t, 3, 1)
	s0 := c.nodes[0]
	waitFor(t, clusterWait, "the configuration to settle", func() bool {
		ss, err := s0.cl.RaftServers()
		return err == nil && len(ss) == 1
	})
	s0.cl.ReconcileNow() // two passes of the leader's reconcile: nobody is added
	s0.cl.ReconcileNow()
	ss, _ := s0.cl.RaftServers()
	if len(ss) != 1 || ss[0].ID != s0.Name() || !ss[0].Voter {
		t.Fatalf("raft configuration %+v; want the server alone", ss)
	}
	for _, nd := range c.nodes[1:] {
		if nd.RaftAddr() != "" || nd.cl.Parts().Store != nil {
			t.Fatalf("%s holds a raft log (raft address %q)", nd.Name(), nd.RaftAddr())
		}
		v, err := raftOf(nd)
		if err != nil || v.State != cluster.StateWatch || len(v.Servers) != 1 || v.Servers[0].ID != s0.Name() || v.Leader != s0.Name() {
			t.Fatalf("%s: raft view %+v, %v", nd.Name(), v, err)
		}
		for _, m := range nd.cl.Members() {
			if m.Name == nd.Name() && (m.Meta.Role != mesh.RoleClient || m.Meta.RaftAddr != "") {
				t.Fatalf("%s advertises %+v", nd.Name(), m.Meta)
			}
		}
	}
}

// TestNonServerReadsTheRegistryFromItsWatch: a session of one node that
// is not a server reaches the registry view of another through the
// leader and a server's watch, and a consistent read from it goes through
// the leader.
func TestNonServerReadsTheRegistryFromItsWatch(t *testing.T) {
	c := startMixedCluster(t, 3, 1)
	n1, n2 := c.nodes[1], c.nodes[2]
	now := time.Now()
	mustIngest(t, n1, presence.Event{SessionID: "w1", Type: presence.TypeSessionStart, TS: now},
		presence.Event{SessionID: "w1", Type: presence.TypeUserPromptSubmit, TS: now.Add(time.Millisecond)})
	waitFor(t, clusterWait, "w1 in n2's registry view", func() bool {
		r, ok := n2.cl.Registry().Get("w1")
		return ok && r.Node == n1.Name()
	})
	if st := n2.cl.Registry().Staleness(); st.Stale || st.LeaderID != c.nodes[0].Name() {
		t.Fatalf("n2's view staleness %+v", st)
	}
	rows, info, err := n2.roster.List(context.Background(), true, true, true)
	if err != nil || !info.Consistent || info.Stale || !slices.ContainsFunc(rows, func(e roster.Entry) bool { return e.State().SessionID == "w1" }) {
		t.Fatalf("consistent read on n2: %d rows, %+v, %v", len(rows), info, err)
	}
}

// TestNonServerKeepsItsViewWhenNoServerAnswers: with the server gone, a
// node keeps serving its own sessions and its last view of the registry,
// and says the view is stale.
func TestNonServerKeepsItsViewWhenNoServerAnswers(t *testing.T) {
	c := startMixedCluster(t, 3, 1)
	n1, n2 := c.nodes[1], c.nodes[2]
	now := time.Now()
	mustIngest(t, n1, presence.Event{SessionID: "k1", Type: presence.TypeSessionStart, TS: now})
	waitFor(t, clusterWait, "k1 in n2's view", func() bool { _, ok := n2.cl.Registry().Get("k1"); return ok })
	c.kill(0)
	waitFor(t, clusterWait, "n2's view to say it is stale", func() bool { return n2.cl.Registry().Staleness().Stale })
	if _, ok := n2.cl.Registry().Get("k1"); !ok {
		t.Fatal("n2 lost its view of the registry with the server")
	}
	_, info, err := n2.roster.List(context.Background(), true, false, true)
	if err != nil || !info.Stale {
		t.Fatalf("a read with no server: %+v, %v", info, err)
	}
	mustIngest(t, n2, presence.Event{SessionID: "own", Type: presence.TypeSessionStart, TS: now})
	if e, ok := rosterState(n2, "own"); !ok || e.Source != "local" {
		t.Fatalf("n2's own session without a server: %+v %v", e, ok)
	}
}

// TestWatchRefusesACallerWithoutACertificate: the registry's watch is
// served to verified mesh members only.
func TestWatchRefusesACallerWithoutACertificate(t *testing.T) {
	m, _ := startTrustMesh(t)
	cl := dialCluster(t, m.nodes[0].RPCAddr(), credentials.NewTLS(rawTLS(nil)))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := cl.Watch(ctx, &api.WatchRequest{})
	var ev *api.WatchEvent
	if err == nil {
		ev, err = stream.Recv()
	}
	if ev != nil || (status.Code(err) != codes.PermissionDenied && status.Code(err) != codes.Unavailable) {
		t.Fatalf("an anonymous watch: event %v, %v; want it refused", ev, err)
	}
}

// TestJoinTokensStayOnTheServers: a node's registry view holds the
// mesh's records but not the join tokens, which only servers redeem.
func TestJoinTokensStayOnTheServers(t *testing.T) {
	m, _ := startTrustMesh(t)
	n1 := m.join("tw1", m.token(false, 0, 0), false)
	m.token(false, time.Hour, 3)
	s0 := m.nodes[0]
	if len(s0.cl.Registry().KVList(meshtrust.KVTokenPrefix)) < 2 {
		t.Fatal("the server holds fewer than two tokens")
	}
	idx := s0.cl.Registry().Staleness().AppliedIndex
	waitFor(t, clusterWait, "tw1's view to reach the server's index", func() bool {
		return n1.cl.Registry().Staleness().AppliedIndex >= idx
	})
	if toks := n1.cl.Registry().KVList(meshtrust.KVTokenPrefix); len(toks) != 0 {
		t.Fatalf("a node's view holds %d join tokens", len(toks))
	}
	if _, ok := n1.cl.Registry().KVGet(meshtrust.KVKeyring); !ok {
		t.Fatal("a node's view lacks the gossip keyring")
	}
}
