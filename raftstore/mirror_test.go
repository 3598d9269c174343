package raftstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/harn-dev/harn/util/clock"
)

// sameView reports whether m holds exactly s's registry (records, claims,
// webhooks, key-value space: the snapshot without the index).
func sameView(s *Store, m *Mirror) (bool, string) {
	a, _ := json.Marshal(s.List())
	b, _ := json.Marshal(m.List())
	if !bytes.Equal(a, b) {
		return false, fmt.Sprintf("records differ: store %d, mirror %d (applied %d / %d)", len(s.List()), len(m.List()),
			s.Staleness().AppliedIndex, m.Applied())
	}
	ka, _ := json.Marshal(s.KVList(""))
	kb, _ := json.Marshal(m.KVList(""))
	if !bytes.Equal(ka, kb) {
		return false, "key-value spaces differ"
	}
	ca, _ := json.Marshal(s.Claims())
	cb, _ := json.Marshal(m.Claims())
	if !bytes.Equal(ca, cb) {
		return false, "claims differ"
	}
	return true, ""
}

// TestMirrorFollowsAServersFeed: a mirror that follows a follower's feed
// holds, after every write committed, exactly the registry the servers
// hold: it replays the same entries through the same Registry.
func TestMirrorFollowsAServersFeed(t *testing.T) {
	c := MakeCluster(t, 3, 3)
	follower := c.Followers()[0]
	for i := range 20 {
		c.Apply(taskUpsert(fmt.Sprintf("early-%d", i), i+1, "before the watch"))
	}
	m := NewMirror(MirrorConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- FollowInProcess(ctx, follower, m, 20*time.Millisecond) }()
	defer func() {
		cancel()
		<-done
	}()
	for i := range 200 {
		c.Apply(taskUpsert(fmt.Sprintf("s-%d", i%50), 100+i, fmt.Sprintf("task %d", i)))
		if i%40 == 0 {
			c.Apply(KVCommand(KVOp{Key: fmt.Sprintf("k/%d", i), Value: []byte("v")}))
		}
	}
	idx := c.Apply(Command{Op: OpClaim, Claim: &ClaimCommand{Repo: "r", Paths: []string{"a.go"}, SessionID: "s-1", Node: "n1", TS: at(999)}})
	waitCtx, wcancel := context.WithTimeout(context.Background(), clusterWait)
	defer wcancel()
	if err := m.WaitForApplied(waitCtx, idx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the follower to apply it too", func() bool { return follower.Staleness().AppliedIndex >= idx })
	if ok, why := sameView(follower, m); !ok {
		t.Fatal(why)
	}
	if st := m.Staleness(); st.Stale || st.LeaderID != c.Leader().ID() {
		t.Fatalf("mirror staleness %+v, leader %s", st, c.Leader().ID())
	}
}

// TestWatchBehindTheFeedStartsFromASnapshot: a follower whose index the
// feed no longer holds is told so (it then takes a snapshot); one within
// the feed continues from it.
func TestWatchBehindTheFeedStartsFromASnapshot(t *testing.T) {
	f := newFeed()
	for i := uint64(1); i <= FeedMaxEntries+10; i++ {
		f.append(FeedEntry{Index: i, Data: []byte("x")})
	}
	if _, _, _, err := f.after(5, 10); !errors.Is(err, ErrFeedGap) {
		t.Fatalf("index 5 after %d entries: %v, want ErrFeedGap", FeedMaxEntries+10, err)
	}
	es, last, _, err := f.after(FeedMaxEntries, 100)
	if err != nil || len(es) != 10 || es[0].Index != FeedMaxEntries+1 || last != FeedMaxEntries+10 {
		t.Fatalf("within the feed: %d entries from %v, last %d, %v", len(es), es, last, err)
	}
	f.reset(20000)
	if _, _, _, err := f.after(FeedMaxEntries+10, 1); !errors.Is(err, ErrFeedGap) {
		t.Fatalf("after a snapshot install: %v, want ErrFeedGap", err)
	}
}

// TestFeedIsBoundedInBytes: large entries push old ones out by size.
func TestFeedIsBoundedInBytes(t *testing.T) {
	f := newFeed()
	big := make([]byte, 1<<20)
	for i := uint64(1); i <= 20; i++ {
		f.append(FeedEntry{Index: i, Data: big})
	}
	if f.bytes > FeedMaxBytes || len(f.entries) != FeedMaxBytes/len(big) {
		t.Fatalf("feed holds %d entries, %d bytes (bound %d)", len(f.entries), f.bytes, FeedMaxBytes)
	}
}

// TestMirrorSaysStaleWhenNoServerSpeaks: a mirror's reads are fresh while
// a server reports within StaleAfter, stale after it, and stale when the
// server itself is.
func TestMirrorSaysStaleWhenNoServerSpeaks(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	m := NewMirror(MirrorConfig{StaleAfter: 6 * time.Second, Clock: clk})
	if st := m.Staleness(); !st.Stale || st.LastContact != -1 {
		t.Fatalf("before any report: %+v", st)
	}
	m.Report(Progress{Server: "s0", Leader: "s1", LeaderContact: 200 * time.Millisecond})
	clk.Advance(6 * time.Second)
	if st := m.Staleness(); st.Stale || st.LeaderID != "s1" || st.LastContact != 6200*time.Millisecond {
		t.Fatalf("a report 6 s old: %+v", st)
	}
	clk.Advance(time.Millisecond)
	if st := m.Staleness(); !st.Stale {
		t.Fatalf("a report older than StaleAfter: %+v", st)
	}
	m.Report(Progress{Server: "s0", Leader: "s1", Stale: true})
	if st := m.Staleness(); !st.Stale {
		t.Fatalf("a stale server's report: %+v", st)
	}
}

// TestMirrorKeepsItsViewAcrossARestart: the saved view is read back at
// the next start, stale until a server speaks, and a watch resumes after
// its index.
func TestMirrorKeepsItsViewAcrossARestart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "registry-view")
	m := NewMirror(MirrorConfig{File: file})
	reg := NewRegistry()
	for i := uint64(1); i <= 5; i++ {
		cmd := taskUpsert(fmt.Sprintf("s%d", i), int(i), "t")
		b, _ := EncodeCommand(cmd)
		m.Apply(FeedEntry{Index: i, Data: b})
		_ = reg.Apply(i, cmd)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2 := NewMirror(MirrorConfig{File: file})
	defer m2.Close()
	if m2.Applied() != 5 || len(m2.List()) != 5 || !m2.Staleness().Stale {
		t.Fatalf("restarted mirror: applied %d, %d records, staleness %+v", m2.Applied(), len(m2.List()), m2.Staleness())
	}
	a, _ := json.Marshal(reg.List())
	b, _ := json.Marshal(m2.List())
	if !bytes.Equal(a, b) {
		t.Fatal("the saved view differs from the registry it followed")
	}
}
