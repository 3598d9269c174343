package tasks

import (
	"context"
	"strconv"
	"testing"

	"github.com/harn-dev/harn/runtime/agent"
)

// TestHistoryIsOrderedBoundedAndResumable: a session's history keeps its
// events in order across tasks, answers from a cursor in bounded
// batches, drops its oldest quarter past keepHistory while the cursor
// keeps counting, and a reader behind the kept range resumes at the
// oldest kept event.
func TestHistoryIsOrderedBoundedAndResumable(t *testing.T) {
	s := newHarnState()
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
