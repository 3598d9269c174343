package mesh

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/harn-dev/harn/util/clock"
)

// wait bounds the tests' waits; generous, for a loaded machine under -race.
const wait = 30 * time.Second

// testCluster is MakeCluster with TestConfig unchanged.
func testCluster(t *testing.T, n int) *Cluster { return MakeCluster(t, n, nil) }

func statusOf(c *Cluster, i int, name string) Status {
	mb, ok := c.Member(i, name)
	if !ok {
		return ""
	}
	return mb.Status
}

func everyoneHas(c *Cluster, except int, key string, version uint64) func() bool {
	return func() bool {
		for i, h := range c.Handlers {
			if i == except {
				continue
			}
			if d, ok := h.Latest(key); !ok || d.Version < version {
				return false
			}
		}
		return true
	}
}

func TestDeltasReachEveryNode(t *testing.T) {
	for _, direct := range []int{32, 0} {
		t.Run(fmt.Sprintf("DirectSendMax=%d", direct), func(t *testing.T) {
			c := MakeCluster(t, 5, func(i int, c *Config) { c.DirectSendMax = direct })
			for v := uint64(1); v <= 3; v++ {
				if err := c.Nodes[2].Broadcast("s-42", v, []byte(fmt.Sprintf("state %d", v))); err != nil {
					t.Fatal(err)
				}
			}
			WaitFor(t, wait, "version 3 everywhere", everyoneHas(c, 2, "s-42", 3))
			for i, h := range c.Handlers {
				if i == 2 {
					if len(h.Deltas()) != 0 {
						t.Fatalf("the origin received its own delta: %+v", h.Deltas())
					}
					continue
				}
				d, _ := h.Latest("s-42")
				if d.From != "node2" || string(d.Data) != "state 3" {
					t.Fatalf("node%d got %+v", i, d)
				}
			}
		})
	}
}

func TestDuplicatesAreDeliveredOnce(t *testing.T) {
	c := testCluster(t, 3)
	if err := c.Nodes[0].Broadcast("k", 7, []byte("x")); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, wait, "delivery", everyoneHas(c, 0, "k", 7))
	// The delta reaches each node twice, by direct send and by gossip:
	// wait until each has dropped a second copy, then count deliveries.
	for i := 1; i < 3; i++ {
		WaitFor(t, wait, fmt.Sprintf("a duplicate dropped on node%d", i), func() bool { return c.Nodes[i].duplicates.Load() > 0 })
	}
	for i := 1; i < 3; i++ {
		if n := len(c.Handlers[i].Deltas()); n != 1 {
			t.Fatalf("node%d: %d deliveries of one version, want 1", i, n)
		}
	}
}

func TestQueuedOlderVersionIsInvalidated(t *testing.T) {
	// A lone node gossips to nobody, so its queue keeps what it is given.
	h := &RecordingHandler{}
	cfg := TestConfig()
	cfg.Name = "alone"
	cfg.Handler = h
	cfg.Transport = (&MemNetwork{}).NewTransport()
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	defer m.Shutdown()

	for _, v := range []uint64{1, 2, 3} {
		if err := m.Broadcast("s-1", v, []byte{byte(v)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Broadcast("s-2", 1, []byte("other")); err != nil {
		t.Fatal(err)
	}
	if err := m.Broadcast("s-1", 2, []byte("stale")); err != nil { // older than 3: dropped
		t.Fatal(err)
	}
	if n := m.queue.numQueued(); n != 2 {
		t.Fatalf("queued %d messages, want 2 (newest of s-1, and s-2)", n)
	}
	msgs := m.queue.get(0, 64*1024)
	var got []string
	for _, b := range msgs {
		d, err := decodeDelta(b)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s@%d", d.key, d.version))
	}
	if strings.Join(got, ",") != "s-1@3,s-2@1" && strings.Join(got, ",") != "s-2@1,s-1@3" {
		t.Fatalf("queue holds %v, want s-1@3 and s-2@1", got)
	}
}

func TestBroadcastTooLarge(t *testing.T) {
	c := MakeCluster(t, 2, nil)
	err := c.Nodes[0].Broadcast("k", 1, make([]byte, MaxFrameSize))
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	// The largest delta that fits still goes through.
	limit := MaxFrameSize - len(encodeDelta("node0", "k", 1, nil))
	if err := c.Nodes[0].Broadcast("k", 1, bytes.Repeat([]byte("x"), limit)); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, wait, "largest delta", everyoneHas(c, 0, "k", 1))
}

func TestPushPullMergesFullStateOnJoin(t *testing.T) {
	c := MakeCluster(t, 2, func(i int, c *Config) {
		c.Handler.(*RecordingHandler).SetState([]byte(fmt.Sprintf("blob of node%d", i)))
	})
	hasFrom := func(h *RecordingHandler, from, blob string) func() bool {
		return func() bool {
			for _, mg := range h.Merges() {
				if mg.From == from && string(mg.Blob) == blob {
					return true
				}
			}
			return false
		}
	}
	WaitFor(t, wait, "node1 merged node0's blob", hasFrom(c.Handlers[1], "node0", "blob of node0"))
	WaitFor(t, wait, "node0 merged node1's blob", hasFrom(c.Handlers[0], "node1", "blob of node1"))

	// Periodic push/pull keeps carrying the current blob.
	c.Handlers[0].SetState([]byte("newer blob"))
	WaitFor(t, wait, "node1 merged the newer blob", hasFrom(c.Handlers[1], "node0", "newer blob"))
}

func TestDeadNodeIsReportedAndStaysListed(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC))
	c := MakeCluster(t, 3, func(i int, c *Config) { c.Clock = clk })
	clk.Advance(time.Hour)
	died := clk.Now()
	if err := c.Nodes[2].Shutdown(); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, wait, "node2 dead on node0", func() bool { return statusOf(c, 0, "node2") == StatusDead })
	mb, _ := c.Member(0, "node2")
	if !mb.Since.Equal(died) {
		t.Fatalf("Since = %v, want %v", mb.Since, died)
	}
	if mb.Addr != "127.0.0.1" || mb.Port == 0 {
		t.Fatalf("dead member lost its address: %+v", mb)
	}
	// memberlist forgets dead nodes after GossipToTheDeadTime (one
	// push/pull interval); mesh does not. Wait for two push/pulls.
	pulled := len(c.Handlers[0].Merges())
	WaitFor(t, wait, "two push/pulls on node0", func() bool { return len(c.Handlers[0].Merges()) >= pulled+2 })
	WaitFor(t, wait, "node2 dead on node1", func() bool { return statusOf(c, 1, "node2") == StatusDead })
	if statusOf(c, 0, "node2") != StatusDead {
		t.Fatalf("node2 no longer listed dead: %+v", c.Members(0))
	}
	if n := c.Nodes[0].NumAlive(); n != 2 {
		t.Fatalf("NumAlive = %d, want 2", n)
	}
	WaitFor(t, wait, "MemberFailed event", func() bool {
		for _, ev := range c.Handlers[0].Events() {
			if ev.Kind == MemberFailed && ev.Member.Name == "node2" {
				return true
			}
		}
		return false
	})
}

func TestLeaveIsReportedAsLeft(t *testing.T) {
	c := testCluster(t, 3)
	if err := c.Nodes[2].Leave(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.Nodes[2].Leave(time.Second); err != nil { // twice: nothing
		t.Fatal(err)
	}
	if err := c.Nodes[2].Broadcast("k", 1, nil); !errors.Is(err, ErrShutdown) {
		t.Fatalf("Broadcast after Leave: %v, want ErrShutdown", err)
	}
	if err := c.Nodes[2].Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := c.Nodes[2].Shutdown(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		WaitFor(t, wait, fmt.Sprintf("node2 left on node%d", i), func() bool { return statusOf(c, i, "node2") == StatusLeft })
	}
	// And it stays left: failure detection does not turn it into "dead",
	// through two push/pulls (full state exchanges) on each node.
	for i := 0; i < 2; i++ {
		pulled := len(c.Handlers[i].Merges())
		WaitFor(t, wait, fmt.Sprintf("two push/pulls on node%d", i), func() bool { return len(c.Handlers[i].Merges()) >= pulled+2 })
	}
	for i := 0; i < 2; i++ {
		if s := statusOf(c, i, "node2"); s != StatusLeft {
			t.Fatalf("node%d sees node2 %s, want left", i, s)
		}
		var kinds []EventKind
		for _, ev := range c.Handlers[i].Events() {
			if ev.Member.Name == "node2" {
				kinds = append(kinds, ev.Kind)
			}
		}
		if kinds[len(kinds)-1] != MemberLeave {
			t.Fatalf("node%d: events for node2 %v, want MemberLeave last", i, kinds)
		}
		for _, k := range kinds {
			if k == MemberFailed {
				t.Fatalf("node%d: node2 reported failed: %v", i, kinds)
			}
		}
	}
}

func TestSuspectAfterFailedDirectSend(t *testing.T) {
	c := MakeCluster(t, 3, func(i int, c *Config) {
		c.SuspicionMult = 6 // keep memberlist's verdict away for a while
	})
	if err := c.Nodes[2].Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := c.Nodes[0].Broadcast("k", 1, []byte("x")); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, wait, "node2 suspect then dead on node0", func() bool {
		var kinds []EventKind
		for _, ev := range c.Handlers[0].Events() {
			if ev.Member.Name == "node2" {
				kinds = append(kinds, ev.Kind)
			}
		}
		return fmt.Sprint(kinds) == fmt.Sprint([]EventKind{MemberJoin, MemberSuspect, MemberFailed})
	})
}

func TestRestartWithPeersFileRejoinsByItself(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "peers.json")
	c := MakeCluster(t, 3, func(i int, c *Config) {
		if i == 2 {
			c.PeersFile = file
		}
	})
	WaitFor(t, wait, "peers file with two peers", func() bool {
		peers, err := loadPeers(file)
		return err == nil && len(peers) == 2
	})
	// A restart with no seeds at all, at another address: only the file
	// knows where the mesh is.
	old := c.Addr(2)
	m := c.Restart(2, func(conf *Config) { conf.Transport = c.Net.NewTransport() })
	if len(m.cfg.Join) != 0 {
		t.Fatal("restarted node has seeds")
	}
	WaitFor(t, wait, "restarted node2 alive everywhere", func() bool {
		for i := 0; i < 3; i++ {
			mb, ok := c.Member(i, "node2")
			if !ok || mb.Status != StatusAlive || mb.Address() == old {
				return false
			}
		}
		return m.NumAlive() == 3
	})
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "peers.json" {
			t.Fatalf("leftover file %s", e.Name())
		}
	}
}

func TestPartitionHeals(t *testing.T) {
	c := testCluster(t, 3)
	c.Partition([]int{0, 1}, []int{2})
	WaitFor(t, wait, "node2 dead on node0", func() bool { return statusOf(c, 0, "node2") == StatusDead })
	WaitFor(t, wait, "node2 alone", func() bool { return c.Nodes[2].NumAlive() == 1 })
	c.Heal()
	WaitFor(t, wait, "merged again", func() bool {
		return c.Nodes[0].NumAlive() == 3 && c.Nodes[2].NumAlive() == 3 && statusOf(c, 0, "node2") == StatusAlive
	})
	var kinds []EventKind
	for _, ev := range c.Handlers[0].Events() {
		if ev.Member.Name == "node2" {
			kinds = append(kinds, ev.Kind)
		}
	}
	if kinds[len(kinds)-1] != MemberAlive {
		t.Fatalf("events for node2 %v, want MemberAlive last", kinds)
	}
	// Deltas flow across the healed link.
	if err := c.Nodes[2].Broadcast("after", 1, []byte("heal")); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, wait, "delta after heal", everyoneHas(c, 2, "after", 1))
}

func TestMetaTravelsAndUpdates(t *testing.T) {
	c := MakeCluster(t, 2, func(i int, c *Config) {
		c.Meta = NodeMeta{Role: RoleServer, RaftAddr: fmt.Sprintf("10.0.0.%d:7000", i), Version: "v1"}
	})
	mb, _ := c.Member(0, "node1")
	if mb.Meta.Role != RoleServer || mb.Meta.RaftAddr != "10.0.0.1:7000" || mb.Meta.Version != "v1" {
		t.Fatalf("meta = %+v", mb.Meta)
	}
	if err := c.Nodes[1].SetMeta(NodeMeta{Role: RoleClient, Version: "v2"}, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, wait, "meta update", func() bool {
		mb, _ := c.Member(0, "node1")
		return mb.Meta.Version == "v2" && mb.Meta.Role == RoleClient
	})
}

func TestLifecycle(t *testing.T) {
	h := &RecordingHandler{}
	cfg := TestConfig()
	cfg.Handler = h
	cfg.Transport = (&MemNetwork{}).NewTransport()
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Broadcast("k", 1, nil); !errors.Is(err, ErrNotStarted) {
		t.Fatalf("Broadcast before Start: %v", err)
	}
	if _, err := m.Join([]string{"127.0.0.1:1"}); !errors.Is(err, ErrNotStarted) {
		t.Fatalf("Join before Start: %v", err)
	}
	if err := m.Leave(time.Second); !errors.Is(err, ErrNotStarted) {
		t.Fatalf("Leave before Start: %v", err)
	}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(); !errors.Is(err, ErrAlreadyStarted) {
		t.Fatalf("second Start: %v", err)
	}
	if got := m.Members(); len(got) != 1 || got[0].Name != "test" || got[0].Status != StatusAlive {
		t.Fatalf("Members = %+v", got)
	}
	if _, err := m.Join([]string{"127.0.0.1:1"}); !errors.Is(err, ErrJoin) {
		t.Fatalf("Join to nowhere: %v", err)
	}
	if err := m.Leave(time.Second); err != nil { // alone: nothing to wait for
		t.Fatal(err)
	}
	if err := m.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := m.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := m.Leave(time.Second); err != nil {
		t.Fatalf("Leave after Shutdown: %v", err)
	}
	if err := m.Start(); !errors.Is(err, ErrShutdown) {
		t.Fatalf("Start after Shutdown: %v", err)
	}

	// Shutdown of a mesh never started is fine too.
	m2, _ := New(cfg)
	if err := m2.Shutdown(); err != nil {
		t.Fatal(err)
	}
}

// memberlist's own MockNetwork works as a Config.Transport for a cluster
// that never loses a node (MemNetwork exists for the tests that do: see
// DESIGN.md). All transports are made before any node starts, because
// MockNetwork's maps are not locked.
func TestMemberlistMockNetworkTransport(t *testing.T) {
	mock := &memberlist.MockNetwork{}
	const n = 3
	var trs []*memberlist.MockTransport
	for i := 0; i < n; i++ {
		trs = append(trs, mock.NewTransport(fmt.Sprintf("node%d", i)))
	}
	var meshes []*Mesh
	var handlers []*RecordingHandler
	for i := 0; i < n; i++ {
		h := &RecordingHandler{}
		cfg := TestConfig()
		cfg.Name = fmt.Sprintf("node%d", i)
		cfg.Handler = h
		cfg.Transport = trs[i]
		if i > 0 {
			cfg.Join = []string{meshes[0].LocalAddr()}
		}
		m, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Start(); err != nil {
			t.Fatal(err)
		}
		meshes = append(meshes, m)
		handlers = append(handlers, h)
	}
	defer (&Cluster{Nodes: meshes}).Close()
	WaitFor(t, wait, "converged", func() bool {
		for _, m := range meshes {
			if m.NumAlive() != n {
				return false
			}
		}
		return true
	})
	if err := meshes[1].Broadcast("k", 1, []byte("over MockNetwork")); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, wait, "delivery", func() bool {
		_, ok0 := handlers[0].Latest("k")
		_, ok2 := handlers[2].Latest("k")
		return ok0 && ok2
	})
}
