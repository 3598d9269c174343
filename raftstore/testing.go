package raftstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// clusterWait bounds every wait of the Cluster helpers. It is generous:
// on a loaded machine under the race detector an election can take
// several rounds, and a wait that ends early fails a test that would
// have passed.
const clusterWait = 30 * time.Second

// Cluster is an in-process raft group for tests: stores wired by
// raft.InmemTransport, with in-memory stores (or bolt stores under
// Base.Dir), bootstrapped together. Partition, Heal, Stop and Restart
// inject faults. It is exported for the node's tests.
type Cluster struct {
	// Stores are the members, s0, s1, …; a restarted member gets a new
	// *Store in its slot. A stopped member's slot holds its closed Store.
	Stores []*Store
	// Base is the configuration every member starts from.
	Base Config

	t      testing.TB
	logger *slog.Logger
	mu     sync.Mutex
	nodes  []*clusterNode
}

type clusterNode struct {
	id      string
	voter   bool
	trans   *raft.InmemTransport
	mem     *raft.InmemStore
	snaps   raft.SnapshotStore
	side    int // stores on the same side of a partition reach each other
	stopped bool
}

// MakeCluster starts n stores, the first voters of them voting, on
// TestConfig timers and in-memory stores, bootstraps them, and waits for
// a leader. Close runs at the end of the test.
func MakeCluster(t testing.TB, n, voters int) *Cluster {
	return MakeClusterConfig(t, n, voters, TestConfig())
}

// MakeClusterConfig is MakeCluster from base. With base.Dir set (and
// InMemory false), each member keeps bolt stores in base.Dir/<id>, so
// that Restart reads them back from disk.
func MakeClusterConfig(t testing.TB, n, voters int, base Config) *Cluster {
	t.Helper()
	if voters < 1 || voters > n {
		t.Fatalf("MakeCluster: need 1 <= voters (%d) <= n (%d)", voters, n)
	}
	c := &Cluster{Base: base, t: t, logger: TestLogger(t, slog.LevelWarn)}
	t.Cleanup(c.Close)
	var servers []Server
	for i := range n {
		nd := &clusterNode{id: fmt.Sprintf("s%d", i), voter: i < voters}
		if base.Dir == "" {
			nd.mem, nd.snaps = raft.NewInmemStore(), NewMemSnapshotStore(1)
		}
		c.nodes = append(c.nodes, nd)
		c.Stores = append(c.Stores, nil)
		servers = append(servers, Server{ID: nd.id, Addr: nd.id, Voter: nd.voter})
	}
	for i := range c.nodes {
		c.start(i)
	}
	for _, s := range c.Stores[:voters] {
		if err := s.Bootstrap(servers); err != nil {
			t.Fatalf("bootstrap %s: %v", s.ID(), err)
		}
	}
	c.Leader()
	return c
}

// start opens member i on a fresh transport, with its kept stores.
func (c *Cluster) start(i int) *Store {
	c.t.Helper()
	nd := c.nodes[i]
	cfg := c.Base
	cfg.ID, cfg.Voter, cfg.Logger = nd.id, nd.voter, c.logger
	_, nd.trans = raft.NewInmemTransport(raft.ServerAddress(nd.id))
	cfg.Transport = nd.trans
	if c.Base.Dir != "" {
		cfg.Dir, cfg.InMemory = filepath.Join(c.Base.Dir, nd.id), false
	} else {
		cfg.InMemory = true
		cfg.LogStore, cfg.StableStore, cfg.SnapshotStore = nd.mem, nd.mem, nd.snaps
	}
	s, err := New(cfg)
	if err != nil {
		c.t.Fatalf("new store %s: %v", nd.id, err)
	}
	if err := s.Open(); err != nil {
		c.t.Fatalf("open store %s: %v", nd.id, err)
	}
	c.mu.Lock()
	nd.stopped = false
	c.Stores[i] = s
	c.rewireLocked()
	c.mu.Unlock()
	return s
}

// rewireLocked connects every two running members on the same side and
// disconnects the rest.
func (c *Cluster) rewireLocked() {
	for _, a := range c.nodes {
		for _, b := range c.nodes {
			if a == b || a.trans == nil || b.trans == nil {
				continue
			}
			if !a.stopped && !b.stopped && a.side == b.side {
				a.trans.Connect(raft.ServerAddress(b.id), b.trans)
			} else {
				a.trans.Disconnect(raft.ServerAddress(b.id))
			}
		}
	}
}

func (c *Cluster) index(id string) int {
	for i, nd := range c.nodes {
		if nd.id == id {
			return i
		}
	}
	c.t.Fatalf("cluster has no store %q", id)
	return -1
}

// Store returns the member with id.
func (c *Cluster) Store(id string) *Store {
	i := c.index(id)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Stores[i]
}

// Running returns the members that are not stopped.
func (c *Cluster) Running() []*Store {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*Store
	for i, nd := range c.nodes {
		if !nd.stopped {
			out = append(out, c.Stores[i])
		}
	}
	return out
}

// Leader waits (bounded) until exactly one running member is leader and
// returns it.
func (c *Cluster) Leader() *Store {
	c.t.Helper()
	deadline := time.Now().Add(clusterWait)
	for {
		var leaders []*Store
		for _, s := range c.Running() {
			if s.IsLeader() {
				leaders = append(leaders, s)
			}
		}
		if len(leaders) == 1 {
			return leaders[0]
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("no single leader after %s (%d leaders)", clusterWait, len(leaders))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Followers returns the running members that are not the leader.
func (c *Cluster) Followers() []*Store {
	l := c.Leader()
	var out []*Store
	for _, s := range c.Running() {
		if s != l {
			out = append(out, s)
		}
	}
	return out
}

// Partition cuts the named members off from all others (they still reach
// each other).
func (c *Cluster) Partition(ids ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	side := 1
	for _, nd := range c.nodes {
		side = max(side, nd.side+1)
	}
	for _, id := range ids {
		c.nodes[c.index(id)].side = side
	}
	c.rewireLocked()
}

// Heal undoes every partition.
func (c *Cluster) Heal() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, nd := range c.nodes {
		nd.side = 0
	}
	c.rewireLocked()
}

// Stop closes member id as a crash would, keeping its stores for Restart.
func (c *Cluster) Stop(id string) {
	c.t.Helper()
	i := c.index(id)
	c.mu.Lock()
	nd, s := c.nodes[i], c.Stores[i]
	if nd.stopped {
		c.mu.Unlock()
		return
	}
	nd.stopped = true
	c.rewireLocked()
	c.mu.Unlock()
	if err := s.Close(); err != nil {
		c.t.Errorf("close %s: %v", id, err)
	}
	nd.trans.Close()
}

// Restart starts a stopped member again from its kept stores.
func (c *Cluster) Restart(id string) *Store {
	c.t.Helper()
	i := c.index(id)
	if !c.nodes[i].stopped {
		c.t.Fatalf("restart %s: it is running", id)
	}
	return c.start(i)
}

// Add starts a new member and adds it, as a voter or not, through the
// leader.
func (c *Cluster) Add(voter bool) *Store {
	c.t.Helper()
	nd := &clusterNode{id: fmt.Sprintf("s%d", len(c.nodes)), voter: voter}
	if c.Base.Dir == "" {
		nd.mem, nd.snaps = raft.NewInmemStore(), NewMemSnapshotStore(1)
	}
	c.mu.Lock()
	c.nodes = append(c.nodes, nd)
	c.Stores = append(c.Stores, nil)
	c.mu.Unlock()
	s := c.start(len(c.nodes) - 1)
	// Adding is idempotent: retry (bounded) through whichever store leads
	// while leadership moves.
	deadline := time.Now().Add(clusterWait)
	for {
		l := c.Leader()
		add := l.AddNonvoter
		if voter {
			add = l.AddVoter
		}
		err := add(nd.id, nd.id)
		if err == nil {
			return s
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("add %s: %v", nd.id, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// RemoveServer removes member id from the configuration through the
// leader, retrying (bounded) while leadership moves. Removing is
// idempotent.
func (c *Cluster) RemoveServer(id string) {
	c.t.Helper()
	deadline := time.Now().Add(clusterWait)
	for {
		err := c.Leader().RemoveServer(id)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("remove %s: %v", id, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// EnsureSame waits (bounded) until every running member holds the same
// records, and fails t otherwise.
func (c *Cluster) EnsureSame(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(clusterWait)
	for {
		stores := c.Running()
		first, _ := json.Marshal(stores[0].List())
		diff := ""
		for _, s := range stores[1:] {
			if b, _ := json.Marshal(s.List()); !bytes.Equal(first, b) {
				diff = fmt.Sprintf("%s has %d records (applied %d), %s has %d (applied %d)",
					stores[0].ID(), len(stores[0].List()), stores[0].Staleness().AppliedIndex,
					s.ID(), len(s.List()), s.Staleness().AppliedIndex)
				break
			}
		}
		if diff == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("registries differ after %s: %s", clusterWait, diff)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Apply applies cmd through the current leader, retrying (bounded) while
// leadership moves.
func (c *Cluster) Apply(cmd Command) uint64 {
	c.t.Helper()
	deadline := time.Now().Add(clusterWait)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		idx, err := c.Leader().Apply(ctx, cmd)
		cancel()
		if err == nil {
			return idx
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("apply: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Close closes every member and transport. It is safe to call twice.
func (c *Cluster) Close() {
	c.mu.Lock()
	nodes, stores := slices.Clone(c.nodes), slices.Clone(c.Stores)
	c.mu.Unlock()
	for i, s := range stores {
		if s != nil {
			s.Close()
		}
		if nodes[i].trans != nil {
			nodes[i].trans.Close()
		}
	}
}

// TestLogger returns a slog.Logger that writes records at level and above
// to t.Log until the test's cleanup, and drops them after.
func TestLogger(t testing.TB, level slog.Level) *slog.Logger {
	h := &tbHandler{state: &tbState{t: t}, level: level}
	t.Cleanup(func() {
		h.state.mu.Lock()
		h.state.done = true
		h.state.mu.Unlock()
	})
	return slog.New(h)
}

type tbState struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

type tbHandler struct {
	state *tbState
	level slog.Level
	attrs []slog.Attr
}

func (h *tbHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *tbHandler) Handle(_ context.Context, r slog.Record) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s %s", r.Time.Format("15:04:05.000"), r.Level, r.Message)
	for _, a := range h.attrs {
		fmt.Fprintf(&b, " %s", a)
	}
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s", a)
		return true
	})
	h.state.mu.Lock()
	defer h.state.mu.Unlock()
	if !h.state.done {
		h.state.t.Log(b.String())
	}
	return nil
}

func (h *tbHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(slices.Clone(h.attrs), as...)
	return &c
}

// WithGroup keeps the handler: the test log prints attributes flat.
func (h *tbHandler) WithGroup(string) slog.Handler { return h }

// nopFSM is the bare side's state machine: it does nothing.
type nopFSM struct{}

func (nopFSM) Apply(*raft.Log) any                 { return nil }
func (nopFSM) Snapshot() (raft.FSMSnapshot, error) { return nopSnap{}, nil }
func (nopFSM) Restore(rc io.ReadCloser) error      { return rc.Close() }

type nopSnap struct{}

func (nopSnap) Persist(sink raft.SnapshotSink) error { return sink.Close() }
func (nopSnap) Release()                             {}

// StartBareRaft starts n plain raft servers (bare0…) on loopback TCP with
// bolt stores under tb.TempDir(), raft's own TCP transport and a no-op FSM,
// on cfg's timers, all bootstrapped as voters: the comparison side of
// benchmarks. They are shut down when tb ends.
func StartBareRaft(tb testing.TB, n int, cfg Config) []*raft.Raft {
	tb.Helper()
	dir := tb.TempDir()
	var rafts []*raft.Raft
	var conf raft.Configuration
	for i := range n {
		id := fmt.Sprintf("bare%d", i)
		d := filepath.Join(dir, id)
		if err := os.MkdirAll(d, 0o700); err != nil {
			tb.Fatal(err)
		}
		bolt, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(d, "raft.db")})
		if err != nil {
			tb.Fatal(err)
		}
		snaps, err := raft.NewFileSnapshotStore(d, 2, io.Discard)
		if err != nil {
			tb.Fatal(err)
		}
		trans, err := raft.NewTCPTransport("127.0.0.1:0", nil, cfg.MaxPool, cfg.IOTimeout, io.Discard)
		if err != nil {
			tb.Fatal(err)
		}
		c := cfg
		c.ID = id
		rc := c.raftConfig()
		rc.LogOutput = io.Discard
		r, err := raft.NewRaft(rc, nopFSM{}, bolt, bolt, snaps, trans)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() {
			r.Shutdown().Error()
			trans.Close()
			bolt.Close()
		})
		rafts = append(rafts, r)
		conf.Servers = append(conf.Servers, raft.Server{ID: raft.ServerID(id), Address: trans.LocalAddr(), Suffrage: raft.Voter})
	}
	for _, r := range rafts {
		if err := r.BootstrapCluster(conf).Error(); err != nil {
			tb.Fatal(err)
		}
	}
	return rafts
}

// BareLeader waits (15 s at most) for one of rafts to lead and returns it.
func BareLeader(tb testing.TB, rafts []*raft.Raft) *raft.Raft {
	tb.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		for _, r := range rafts {
			if r.State() == raft.Leader {
				return r
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	tb.Fatal("no bare raft leader")
	return nil
}

// FollowInProcess makes m follow s's feed the way a node's watch does over
// the cluster gRPC (a snapshot when the feed does not reach m, then the
// entries after it, and a progress report every wake), until ctx ends or
// s closes. It is exported for the node's simulation and tests.
func FollowInProcess(ctx context.Context, s *Store, m *Mirror, every time.Duration) error {
	w := s.Watch(m.Applied())
	t := time.NewTicker(every)
	defer t.Stop()
	report := func() {
		st := s.Stats()
		m.Report(Progress{Server: s.ID(), Leader: st.LeaderID, Term: st.Term, CommitIndex: st.CommitIndex,
			Applied: st.AppliedIndex, Stale: st.Read.Stale, LeaderContact: st.Read.LastContact, Servers: st.Servers})
	}
	report()
	for {
		if w.NeedSnapshot() {
			b, _, err := w.Snapshot(true)
			if err != nil {
				return err
			}
			if err := m.Restore(b); err != nil {
				return err
			}
		}
		es, err := w.Next(ctx, 256, t.C)
		if errors.Is(err, ErrFeedGap) {
			continue
		}
		if err != nil {
			return err
		}
		for _, e := range es {
			m.Apply(e)
		}
		if len(es) == 0 {
			report()
		}
	}
}
