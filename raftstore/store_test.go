package raftstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func taskUpsert(id string, ms int, text string) Command {
	return UpsertCommand(Upsert{SessionID: id, TS: at(ms), Task: &TaskPatch{Text: text}})
}

// waitFor polls cond (bounded) and fails with what when it stays false.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(clusterWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// verifiedLeader returns the leader once a VerifyRead on it succeeds
// (bounded): its local reads are then linearizable.
func verifiedLeader(t *testing.T, c *Cluster) *Store {
	t.Helper()
	var l *Store
	waitFor(t, "a verified leader", func() bool {
		l = c.Leader()
		return l.VerifyRead(ctxT(t)) == nil
	})
	return l
}

func TestStoreLifecycle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "raft")
	cfg := TestConfig()
	cfg.ID, cfg.Dir, cfg.BindAddr = "n1", dir, "127.0.0.1:0"
	cfg.Logger = TestLogger(t, slog.LevelWarn)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("New touched the disk: %v", err)
	}
	if _, err := s.Apply(ctxT(t), taskUpsert("a", 1, "t")); !errors.Is(err, ErrClosed) {
		t.Fatalf("apply before open: %v", err)
	}
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	if has, err := s.HasState(); err != nil || has {
		t.Fatalf("HasState before bootstrap = %v, %v", has, err)
	}
	if err := s.Bootstrap(nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Bootstrap(nil); err != nil {
		t.Fatalf("second bootstrap: %v", err)
	}
	if err := s.WaitForLeader(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "lone leader", s.IsLeader)
	if _, err := s.Apply(ctxT(t), taskUpsert("a", 1, "t")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(ctxT(t), Command{Op: "nope"}); !errors.Is(err, ErrInvalidCommand) {
		t.Fatalf("invalid command: %v", err)
	}
	if err := s.VerifyRead(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if rec, ok := s.Get("a"); !ok || rec.Task != "t" {
		t.Fatalf("get: %+v %v", rec, ok)
	}
	st := s.Stats()
	if st.State != "Leader" || st.LeaderID != "n1" || len(st.Servers) != 1 || !st.Servers[0].Voter || st.Sessions != 1 {
		t.Fatalf("stats: %+v", st)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if err := s.Open(); !errors.Is(err, ErrClosed) {
		t.Fatalf("open after close: %v", err)
	}
	if err := s.VerifyRead(ctxT(t)); !errors.Is(err, ErrClosed) {
		t.Fatalf("verify after close: %v", err)
	}
	if info := s.Staleness(); !info.Stale {
		t.Fatalf("closed store not stale: %+v", info)
	}
}

func TestConfigValidate(t *testing.T) {
	ok := TestConfig()
	ok.ID, ok.InMemory, ok.BindAddr = "a", true, "127.0.0.1:0"
	cases := map[string]func(*Config){
		"ID":            func(c *Config) { c.ID = "" },
		"Dir":           func(c *Config) { c.InMemory = false },
		"BindAddr":      func(c *Config) { c.BindAddr = "nope" },
		"AdvertiseAddr": func(c *Config) { c.AdvertiseAddr = "0.0.0.0:7000" },
		"MaxPool":       func(c *Config) { c.MaxPool = 0 },
		"timers":        func(c *Config) { c.LeaderLeaseTimeout = time.Hour },
	}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for field, mutate := range cases {
		c := ok
		mutate(&c)
		if err := c.Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: err = %v", field, err)
		}
	}
}

func TestApplyReplicatesToAll(t *testing.T) {
	c := MakeCluster(t, 3, 3)
	var last uint64
	for i := range 20 {
		// Through whichever store leads: indexes grow across leaders too.
		idx := c.Apply(taskUpsert(fmt.Sprintf("s%02d", i), i+1, "task"))
		if idx <= last {
			t.Fatalf("index %d after %d", idx, last)
		}
		last = idx
	}
	for _, s := range c.Stores {
		if err := s.WaitForApplied(ctxT(t), last); err != nil {
			t.Fatalf("%s: %v", s.ID(), err)
		}
		if n := len(s.List()); n != 20 {
			t.Fatalf("%s holds %d records", s.ID(), n)
		}
	}
	c.EnsureSame(t)
}

func TestNonLeaderApplyNamesLeader(t *testing.T) {
	c := MakeCluster(t, 3, 3)
	// An election in the middle changes whom the errors name: retry
	// (bounded) until one round saw one leader, in one term, throughout.
	var l, f *Store
	var applyErr, readErr error
	waitFor(t, "a round with a steady leader", func() bool {
		l = c.Leader()
		term := l.Stats().Term
		f = c.Followers()[0]
		if id, _ := f.Leader(); id != l.ID() {
			return false
		}
		_, applyErr = f.Apply(ctxT(t), taskUpsert("a", 1, "t"))
		readErr = f.VerifyRead(ctxT(t))
		return l.IsLeader() && l.Stats().Term == term
	})
	var nle *NotLeaderError
	if !errors.As(applyErr, &nle) || !errors.Is(applyErr, ErrNotLeader) || errors.Is(applyErr, ErrNoLeader) {
		t.Fatalf("follower apply: %v", applyErr)
	}
	if nle.LeaderID != l.ID() || nle.LeaderAddr != l.Addr() {
		t.Fatalf("NotLeaderError names %s at %s, leader is %s at %s", nle.LeaderID, nle.LeaderAddr, l.ID(), l.Addr())
	}
	if !errors.As(readErr, &nle) || nle.LeaderID != l.ID() {
		t.Fatalf("follower VerifyRead: %v", readErr)
	}
	if err := f.AddVoter("x", "x"); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("follower AddVoter: %v", err)
	}
}

func TestNonVoterServesStaleReads(t *testing.T) {
	c := MakeCluster(t, 3, 2)
	nv := c.Store("s2")
	l := c.Leader()
	if nv.IsLeader() {
		t.Fatal("a non-voter leads")
	}
	servers, err := l.Servers()
	if err != nil {
		t.Fatal(err)
	}
	for _, sv := range servers {
		if sv.Voter != (sv.ID != "s2") {
			t.Fatalf("suffrage: %+v", servers)
		}
	}
	idx := c.Apply(taskUpsert("a", 1, "replicated"))
	if err := nv.WaitForApplied(ctxT(t), idx); err != nil {
		t.Fatal(err)
	}
	if rec, ok := nv.Get("a"); !ok || rec.Task != "replicated" || rec.Index != idx {
		t.Fatalf("non-voter read: %+v %v", rec, ok)
	}
	info := nv.Staleness()
	if info.Stale || info.LeaderID != c.Leader().ID() || info.AppliedIndex < idx || info.LastContact < 0 {
		t.Fatalf("non-voter staleness: %+v", info)
	}
	// Losing the non-voter costs the voters nothing.
	c.Stop("s2")
	c.Apply(taskUpsert("b", 2, "t"))
}

func TestLeaderLossKeepsAcknowledgedWrites(t *testing.T) {
	c := MakeCluster(t, 3, 3)
	// Through whichever store leads: on a loaded machine leadership may
	// move during the writes, which is not what this test is about.
	for i := range 30 {
		c.Apply(taskUpsert(fmt.Sprintf("s%02d", i), i+1, "t"))
	}
	old := c.Leader()
	c.Stop(old.ID())
	l := verifiedLeader(t, c)
	if l.ID() == old.ID() {
		t.Fatal("the stopped store leads")
	}
	if n := len(l.List()); n != 30 {
		t.Fatalf("new leader holds %d of 30 acknowledged writes", n)
	}
	c.Apply(taskUpsert("after", 100, "t"))
	back := c.Restart(old.ID())
	c.EnsureSame(t)
	if _, ok := back.Get("after"); !ok {
		t.Fatal("restarted store missed the write made while it was down")
	}
}

func TestPartitionMinorityFailsMajorityContinues(t *testing.T) {
	c := MakeCluster(t, 3, 3)
	// Writes go through whichever store leads (c.Apply): an election on a
	// loaded machine is not what this test is about.
	idx := c.Apply(taskUpsert("before", 1, "t"))
	minority := c.Followers()[0]
	if err := minority.WaitForApplied(ctxT(t), idx); err != nil {
		t.Fatal(err)
	}
	c.Partition(minority.ID())
	waitFor(t, "minority loses its leader", func() bool { id, _ := minority.Leader(); return id == "" })
	_, err := minority.Apply(ctxT(t), taskUpsert("lost", 2, "t"))
	if !errors.Is(err, ErrNoLeader) || !errors.Is(err, ErrNotLeader) {
		t.Fatalf("minority apply: %v", err)
	}
	if err := minority.VerifyRead(ctxT(t)); !errors.Is(err, ErrNoLeader) {
		t.Fatalf("minority VerifyRead: %v", err)
	}
	waitFor(t, "minority reads stale", func() bool { return minority.Staleness().Stale })
	if _, ok := minority.Get("before"); !ok {
		t.Fatal("minority lost its stale read")
	}
	for i := range 10 {
		c.Apply(taskUpsert(fmt.Sprintf("during%d", i), 10+i, "t"))
	}
	c.Heal()
	c.EnsureSame(t)
	waitFor(t, "minority fresh again", func() bool { return !minority.Staleness().Stale })
	if _, ok := minority.Get("during9"); !ok {
		t.Fatal("healed minority lacks the majority's writes")
	}
	if _, ok := minority.Get("lost"); ok {
		t.Fatal("a refused write appeared")
	}
}

func TestVerifyReadFailsOnDeposedLeader(t *testing.T) {
	c := MakeCluster(t, 3, 3)
	old := verifiedLeader(t, c)
	c.Partition(old.ID())
	// Right after the cut the old leader may still believe it leads;
	// VerifyRead must not succeed for it all the same.
	if err := old.VerifyRead(ctxT(t)); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("partitioned leader VerifyRead: %v", err)
	}
	l := c.Leader()
	if l.ID() == old.ID() {
		t.Fatal("the partitioned store still leads")
	}
	c.Apply(taskUpsert("new", 1, "t"))
	if _, err := old.Apply(ctxT(t), taskUpsert("old", 1, "t")); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("deposed leader apply: %v", err)
	}
	c.Heal()
	c.EnsureSame(t)
}

func TestSnapshotCatchUpOfNewStore(t *testing.T) {
	base := TestConfig()
	base.TrailingLogs = 5
	c := MakeClusterConfig(t, 3, 3, base)
	for i := range 100 {
		c.Apply(taskUpsert(fmt.Sprintf("s%03d", i), i+1, "t"))
	}
	// Every store snapshots and compacts, so that whichever leads when
	// the joiner arrives (leadership may move on a loaded machine) must
	// install a snapshot on it.
	c.EnsureSame(t)
	for _, s := range c.Running() {
		if err := s.Snapshot(); err != nil {
			t.Fatal(err)
		}
		if st := s.Stats(); st.SnapshotIndex == 0 {
			t.Fatalf("no snapshot taken: %+v", st)
		}
	}
	joiner := c.Add(false)
	c.EnsureSame(t)
	if n := len(joiner.List()); n != 100 {
		t.Fatalf("joiner holds %d records", n)
	}
	// Raft records the installed snapshot's index only after the FSM has
	// restored it, so the records can be there a moment before the index.
	deadline := time.Now().Add(10 * time.Second)
	for st := joiner.Stats(); st.SnapshotIndex == 0; st = joiner.Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("joiner caught up without a snapshot install: %+v", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A joining voter too, and then its removal.
	v := c.Add(true)
	c.EnsureSame(t)
	c.RemoveServer(v.ID())
	servers, _ := c.Leader().Servers()
	if len(servers) != 4 {
		t.Fatalf("after remove: %+v", servers)
	}
}

func TestRestartFromDiskRestoresRegistry(t *testing.T) {
	base := TestConfig()
	base.Dir = t.TempDir()
	base.TrailingLogs = 2
	c := MakeClusterConfig(t, 3, 3, base)
	for i := range 40 {
		c.Apply(taskUpsert(fmt.Sprintf("s%02d", i), i+1, "before snapshot"))
	}
	for _, s := range c.Stores {
		if err := s.Snapshot(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		c.Apply(UpsertCommand(lifecycle(fmt.Sprintf("s%02d", i), 1000+i, "done", "")))
	}
	c.EnsureSame(t)
	want := c.Leader().List()
	for _, s := range c.Stores {
		c.Stop(s.ID())
	}
	for _, id := range []string{"s0", "s1", "s2"} {
		s := c.Restart(id)
		if has, err := s.HasState(); err != nil || !has {
			t.Fatalf("%s HasState = %v, %v", id, has, err)
		}
	}
	// Entries after the snapshot are applied once the new leader commits
	// in its term; a consistent read waits for that.
	verifiedLeader(t, c)
	c.EnsureSame(t)
	got := c.Leader().List()
	if a, b := fmt.Sprint(want), fmt.Sprint(got); a != b {
		t.Fatalf("registry after restart differs:\n%s\n%s", a, b)
	}
	if rec, _ := c.Leader().Get("s03"); rec.TaskState != "done" {
		t.Fatalf("log entries after the snapshot were not replayed: %+v", rec)
	}
}
