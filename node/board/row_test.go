package board

import (
	"testing"
	"time"
	"unicode"
)

func TestEvidenceFallsBackToTheNewestAxisTime(t *testing.T) {
	r := Row{ActivityUpdatedAt: t0.Add(-time.Hour), TaskStateUpdatedAt: t0.Add(-time.Minute), LastEventAt: t0.Add(-2 * time.Hour)}
	if !r.Evidence().Equal(t0.Add(-time.Minute)) {
		t.Fatal(r.Evidence())
	}
}

func TestCleanStripsControlCharacters(t *testing.T) {
	r := clean(Row{SessionID: "s\x1b[31m", Task: "a\x07b\u202e", PendingRequests: []Request{{ID: "r\x00", Summary: "x\x9b"}},
		HarnTask: &HarnTask{ID: "t\x1b", PendingCalls: []string{"c\x1b"}}, Claims: []string{"\x1bp"}})
	all := r.SessionID + r.Task + r.PendingRequests[0].ID + r.PendingRequests[0].Summary + r.HarnTask.ID + r.HarnTask.PendingCalls[0] + r.Claims[0]
	for _, c := range all {
		if unicode.IsControl(c) || c == '\u202e' {
			t.Fatalf("control character %U left in %q", c, all)
		}
	}
}
