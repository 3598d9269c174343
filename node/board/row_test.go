package board

import (
	"testing"
	"time"
	"unicode"

	"github.com/harn-dev/harn/node/api"
)

// ns is t as a row's time.
func ns(t time.Time) int64 { return api.UnixNano(t) }

func TestEvidenceFallsBackToTheNewestAxisTime(t *testing.T) {
	r := RowOf(&api.SessionRow{ActivityUpdatedAtUnixNano: ns(t0.Add(-time.Hour)),
		TaskStateUpdatedAtUnixNano: ns(t0.Add(-time.Minute)), LastEventAtUnixNano: ns(t0.Add(-2 * time.Hour))})
	if !r.Evidence().Equal(t0.Add(-time.Minute)) {
		t.Fatal(r.Evidence())
	}
}

// TestRowOfIsTheRowItself: the board reads the roster row it is given
// (no copy of its fields); a harn task's pending calls become
// confirmation requests and its text stands in for a missing task.
func TestRowOfIsTheRowItself(t *testing.T) {
	s := &api.SessionRow{SessionId: "s-1", HarnTask: &api.HarnTask{Id: "t-1", State: "running", Text: "fix it",
		PendingCalls: []string{"c1", "c2"}}}
	r := RowOf(s)
	if r.SessionRow != s {
		t.Fatal("RowOf copied the row")
	}
	if r.TaskText() != "fix it" || !r.HasTask() {
		t.Fatalf("task %q, has task %v", r.TaskText(), r.HasTask())
	}
	if len(r.PendingRequests) != 2 || r.PendingRequests[1] != (Request{ID: "c2", Kind: "confirmation", TaskID: "t-1"}) {
		t.Fatalf("requests %+v", r.PendingRequests)
	}
	s.Task = "own task"
	if r.TaskText() != "own task" {
		t.Fatal(r.TaskText())
	}
	if RowOf(nil).GetSessionId() != "" || RowOf(nil).SessionRow == nil {
		t.Fatal("RowOf(nil) is not an empty row")
	}
}

func TestCleanStripsControlCharacters(t *testing.T) {
	orig := &api.SessionRow{SessionId: "s\x1b[31m", Task: "a\x07b\u202e",
		HarnTask: &api.HarnTask{Id: "t\x1b", PendingCalls: []string{"c\x1b"}}, Claims: []string{"\x1bp"},
		Hosted: &api.HostedView{Worktree: "w\x1b]0;x\x07", Peek: []string{"p\x1b"}}}
	r := clean(Row{SessionRow: orig, PendingRequests: []Request{{ID: "r\x00", Summary: "x\x9b"}}})
	all := r.SessionId + r.Task + r.PendingRequests[0].ID + r.PendingRequests[0].Summary + r.HarnTask.Id +
		r.HarnTask.PendingCalls[0] + r.Claims[0] + r.Hosted.Worktree + r.Hosted.Peek[0]
	for _, c := range all {
		if unicode.IsControl(c) || c == '\u202e' {
			t.Fatalf("control character %U left in %q", c, all)
		}
	}
	if orig.SessionId != "s\x1b[31m" || orig.Hosted.Peek[0] != "p\x1b" || orig.Claims[0] != "\x1bp" {
		t.Fatal("clean changed the caller's row")
	}
	if clean(Row{}).SessionRow == nil {
		t.Fatal("clean of an empty row has no row")
	}
}
