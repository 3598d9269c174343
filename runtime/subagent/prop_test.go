package subagent

import (
	"errors"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/harn-dev/harn/runtime"
)

// TestPropertyLimitsAndOneOutcomeEach: for any interleaving of requests,
// handoffs (valid or not), task ends and cancellations over three
// parents, no more than MaxRunning children run per parent and per node
// (as the runner sees them), and once everything has ended every accepted
// request has exactly one outcome, stored, and every started child was
// closed exactly once.
func TestPropertyLimitsAndOneOutcomeEach(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		st := newMemStore()
		r := newFakeRunner()
		m := newTestManager(t, r, st)
		parents := []string{"p1", "p2", "p3"}
		var ids []string
		check := func() {
			per := map[string]int{}
			for _, id := range r.runningIDs() {
				per[r.spec(id).Child.Parent]++
			}
			n := 0
			for p, k := range per {
				n += k
				if k > MaxRunning {
					t.Fatalf("%s runs %d", p, k)
				}
			}
			if n > MaxRunning {
				t.Fatalf("the node runs %d", n)
			}
		}
		steps := rapid.IntRange(1, 200).Draw(t, "steps")
		for range steps {
			run := r.runningIDs()
			switch op := rapid.IntRange(0, 5).Draw(t, "op"); {
			case op <= 1 || len(run) == 0 && op < 5:
				p := rapid.SampledFrom(parents).Draw(t, "parent")
				id, err := m.Spawn(Request{Parent: p, Profile: ProfileExplorer, Brief: "b"})
				if err != nil && !errors.Is(err, ErrBusy) {
					t.Fatal(err)
				}
				if err == nil {
					ids = append(ids, id)
				}
			case op == 2:
				id := rapid.SampledFrom(run).Draw(t, "child")
				raw := validHandoff
				if rapid.Bool().Draw(t, "invalid") {
					raw = `{"status":"nope"}`
				}
				m.Handoff(id, []byte(raw))
			case op == 3:
				id := rapid.SampledFrom(run).Draw(t, "child")
				m.Ended(id, rapid.SampledFrom([]runtime.Status{runtime.StatusSucceeded, runtime.StatusFailed, runtime.StatusCancelled}).Draw(t, "status"))
			case op == 4 && len(ids) > 0:
				_ = m.Cancel(rapid.SampledFrom(ids).Draw(t, "cancel"), "test")
			}
			check()
		}
		// Drain: every running child hands off and ends.
		for i := 0; i < 4*len(ids)+4; i++ {
			run := r.runningIDs()
			if len(run) == 0 {
				break
			}
			m.Handoff(run[0], []byte(validHandoff))
			m.Ended(run[0], runtime.StatusSucceeded)
			check()
		}
		closed := map[string]int{}
		for _, c := range r.closed {
			closed[c.ID]++
		}
		for _, id := range ids {
			c, err := m.Get(id)
			if err != nil {
				t.Fatal(err)
			}
			if c.State != StateEnded || c.Outcome == "" {
				t.Fatalf("%s did not end: %+v", id, c)
			}
			if c.Outcome == OutcomeValid && c.Handoff == nil {
				t.Fatalf("%s valid without a handoff", id)
			}
			if s := st.recs[id]; s.Outcome != c.Outcome || s.State != StateEnded {
				t.Fatalf("%s stored %+v, live %+v", id, s, c)
			}
			want := 0
			if !c.Started.IsZero() {
				want = 1
			}
			if closed[id] != want {
				t.Fatal(fmt.Sprintf("%s closed %d times, want %d", id, closed[id], want))
			}
		}
	})
}
