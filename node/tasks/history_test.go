package tasks

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/agent"
	"github.com/harn-dev/harn/util/clock"
)

// TestHistoryIsOrderedBoundedAndResumable: a session's history keeps its
// events in order across tasks, answers from a cursor in bounded
// batches, drops its oldest quarter past keepHistory while the cursor
// keeps counting, and a reader behind the kept range resumes at the
// oldest kept event.
func TestHistoryIsOrderedBoundedAndResumable(t *testing.T) {
	s := newHarnState(nil)
	total := keepHistory + 10
	for i := 0; i < total; i++ {
		task := "t-" + strconv.Itoa(i%3)
		s.add(agent.Event{Type: agent.EvText, Task: task, Text: strconv.Itoa(i)})
	}
	s.add(agent.Event{Type: agent.EvModel, Task: "t-0", Usage: nil})
	ctx := context.Background()
	evs, next, _ := s.historySince(ctx, 0, 0)
	if len(evs) != maxHistoryBatch || evs[0].Text != strconv.Itoa(keepHistory/4) {
		t.Fatalf("from 0: %d events from %q; want %d from the oldest kept (%d)", len(evs), evs[0].Text, maxHistoryBatch, keepHistory/4)
	}
	if next != keepHistory/4+maxHistoryBatch {
		t.Fatalf("next %d", next)
	}
	seen := len(evs)
	for guard := 0; guard < 100; guard++ {
		more, n, _ := s.historySince(ctx, next, 0)
		if len(more) == 0 {
			break
		}
		for i, e := range more {
			if e.Type == agent.EvText && e.Text != strconv.Itoa(next+i) {
				t.Fatalf("event %d is %q", next+i, e.Text)
			}
		}
		seen, next = seen+len(more), n
	}
	if next != total+1 || seen != total+1-keepHistory/4 {
		t.Fatalf("read to %d (%d events); want %d", next, seen, total+1)
	}
}

// TestStoredHistoryKeepsTheNewestRing: the stored history is a ring of
// keepHistory slots per session; read back, it is the newest keepHistory
// events with their cursors, and another session's ring (a name that
// extends this one's) is not mixed in.
func TestStoredHistoryKeepsTheNewestRing(t *testing.T) {
	h, err := New(Config{Node: "n1", KV: &memKV{}, Key: bytes.Repeat([]byte{7}, 32), Clock: clock.Real{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	total := keepHistory + 10
	put := h.persistHistory("h-1")
	for i := range total {
		put(i, agent.Event{Type: agent.EvText, Task: "t", Text: strconv.Itoa(i)})
	}
	h.persistHistory("h-10")(0, agent.Event{Type: agent.EvText, Task: "u", Text: "other"})
	s, err := h.storedHistory("h-1")
	if err != nil || s == nil {
		t.Fatalf("stored history: %v %v", s, err)
	}
	from := 0
	var got []agent.Event
	for guard := 0; guard < 100; guard++ {
		evs, next, _ := s.historySince(context.Background(), from, 0)
		if len(evs) == 0 {
			break
		}
		if guard == 0 && next-len(evs) != total-keepHistory {
			t.Fatalf("the first cursor read back is %d, want %d", next-len(evs), total-keepHistory)
		}
		got, from = append(got, evs...), next
	}
	if len(got) != keepHistory || from != total {
		t.Fatalf("read back %d events to cursor %d; want %d to %d", len(got), from, keepHistory, total)
	}
	for i, e := range got {
		if e.Text != strconv.Itoa(total-keepHistory+i) {
			t.Fatalf("event %d is %q", i, e.Text)
		}
	}
	if s, err := h.storedHistory("h-2"); s != nil || err != nil {
		t.Fatalf("a session with no history: %v %v", s, err)
	}
}

// TestHistoryOpAnswersAfterANodeRestart: a harn session's history (the
// TUI's screen) is answered by the history op of the node started again
// on the same store, event for event, with the same cursor.
func TestHistoryOpAnswersAfterANodeRestart(t *testing.T) {
	kv := &memKV{}
	cfg := Config{Node: "n1", KV: kv, Key: bytes.Repeat([]byte{7}, 32), Clock: clock.Real{}}
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := modeltest.New(t, modeltest.Text("line one\nline two"))
	id, err := h.OpenHarn(HarnOptions{URL: srv.URL(), Model: "test-model", Key: "k"}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	v, err := h.rt.Start(id, runtime.Request{Text: "say two lines", Grants: []runtime.Grant{{Level: runtime.Execute, Capability: "*"}}})
	if err != nil {
		t.Fatal(err)
	}
	waitTaskDone(t, h, v.ID)
	var before Result
	deadline := time.Now().Add(30 * time.Second)
	for {
		if before, err = h.history(Action{Op: OpHistory, Session: id}); err != nil {
			t.Fatal(err)
		}
		if n := len(before.Events); n > 0 && before.Events[n-1].Type == agent.EvTurnEnd {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the turn's end is not in the history: %+v", before.Events)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, bounded by the deadline
	}
	h.Close()

	h2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h2.Close)
	after, err := h2.history(Action{Op: OpHistory, Session: id})
	if err != nil {
		t.Fatal(err)
	}
	if after.Session != id || after.Next != before.Next || len(after.Events) != len(before.Events) {
		t.Fatalf("after the restart: session %s, next %d, %d events; before: next %d, %d events",
			after.Session, after.Next, len(after.Events), before.Next, len(before.Events))
	}
	for i := range before.Events {
		b, a := before.Events[i], after.Events[i]
		if a.Type != b.Type || a.Task != b.Task || a.Text != b.Text || a.Call != b.Call || !a.At.Equal(b.At) {
			t.Fatalf("event %d: %+v, before %+v", i, a, b)
		}
	}
	if !strings.Contains(fmt.Sprint(after.Events), "line two") {
		t.Fatalf("the answer is not in the history read back: %+v", after.Events)
	}
	if more, err := h2.history(Action{Op: OpHistory, Session: id, Since: after.Next}); err != nil || len(more.Events) != 0 {
		t.Fatalf("past the end: %+v %v", more.Events, err)
	}
}
