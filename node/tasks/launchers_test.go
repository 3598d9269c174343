package tasks

import (
	"errors"
	"testing"

	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/util/clock"
)

// TestStartRecordsWhoSubmittedIt: the operator of a start is in the task's
// view and in its task.submit ledger record.
func TestStartRecordsWhoSubmittedIt(t *testing.T) {
	h, kv := newHost(t, clock.Real{})
	res, err := h.Do(Action{Op: OpStart, Session: "cc1", Text: "review", By: "alice (uid 1000)@laptop"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Task == nil || res.Task.By != "alice (uid 1000)@laptop" {
		t.Fatalf("view %+v", res.Task)
	}
	recs, err := NewLedger(kv).Records(res.Task.ID)
	if err != nil || len(recs) == 0 || recs[0].Kind != runtime.RecSubmit || recs[0].By != "alice (uid 1000)@laptop" {
		t.Fatalf("ledger %+v %v", recs, err)
	}
}

// TestStartOfAnUndefinedLauncherIsNotFound: a start names only a launcher
// the node defines; the error lists what is defined.
func TestStartOfAnUndefinedLauncherIsNotFound(t *testing.T) {
	h, _ := newHost(t, clock.Real{})
	_, err := h.Do(Action{Op: OpStart, Launcher: "sh", Text: "x"})
	if !errors.Is(err, ErrNoLauncher) || KindOf(err) != KindNotFound {
		t.Fatalf("err %v (kind %v)", err, KindOf(err))
	}
	if _, err := h.Do(Action{Op: OpStart, Launcher: "a", Command: "cat", Text: "x"}); !errors.Is(err, ErrBadAction) {
		t.Fatalf("both a launcher and a command: %v", err)
	}
}
