package roster

import (
	"errors"
	"testing"

	"github.com/harn-dev/harn/node/alerts"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/operator"
	"github.com/harn-dev/harn/presence"
)

// TestPickWaitedFindsTheStateOrRefusesAnEndedSession: a wait on an id
// finds that session in the state; on one that ended without it, it is
// refused (ErrWaitEnded, ErrRefused); a wait on any live session skips
// ended ones.
func TestPickWaitedFindsTheStateOrRefusesAnEndedSession(t *testing.T) {
	entries := []Entry{
		entryOf(presence.State{SessionID: "done", TaskState: presence.TaskDone, Ended: true}),
		entryOf(presence.State{SessionID: "gone", Ended: true}),
		entryOf(presence.State{SessionID: "live", TaskState: presence.TaskBlocked}),
	}
	if e, found, err := pickWaited(entries, "done", alerts.WaitDone); err != nil || !found || e.GetSessionId() != "done" {
		t.Fatalf("done: %v %v %v", e.GetSessionId(), found, err)
	}
	if _, found, err := pickWaited(entries, "gone", alerts.WaitDone); found || !errors.Is(err, ErrWaitEnded) || !errors.Is(err, operator.ErrRefused) {
		t.Fatalf("gone: found %v, %v", found, err)
	}
	if _, found, err := pickWaited(entries, "live", alerts.WaitDone); found || err != nil {
		t.Fatalf("live, not yet done: found %v, %v", found, err)
	}
	if _, found, _ := pickWaited(entries, "", alerts.WaitDone); found {
		t.Fatal("any: an ended session was picked")
	}
	if e, found, err := pickWaited(entries, "", alerts.WaitBlocked); err != nil || !found || e.GetSessionId() != "live" {
		t.Fatalf("any blocked: %v %v %v", e.GetSessionId(), found, err)
	}
}

// entryOf is a roster entry of st.
func entryOf(st presence.State) Entry { return Entry{SessionRow: api.RowOf(&st)} }
