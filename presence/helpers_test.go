package presence

import (
	"fmt"
	"slices"
	"time"
)

// t0 is the seed's morning.
var t0 = time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC)

const testSession = "s-42"

// ev makes event number i of testSession: id "e%04d", ts t0 + i seconds, and
// attributes from key/value pairs.
func ev(i int, typ string, kv ...any) Event {
	e := Event{
		ID:        fmt.Sprintf("e%04d", i),
		SessionID: testSession,
		Type:      typ,
		TS:        t0.Add(time.Duration(i) * time.Second),
		Agent:     "claude-code",
	}
	for j := 0; j+1 < len(kv); j += 2 {
		e.SetAttr(kv[j].(string), kv[j+1])
	}
	return e
}

// sub makes ev a subagent's event.
func sub(e Event) Event {
	e.ParentSessionID = "s-parent"
	return e
}

// fold folds copies of evs, leaving the caller's slice in its order.
func fold(evs ...Event) State { return Fold(slices.Clone(evs)) }

// seq numbers the given types 1, 2, 3... as events.
func seq(types ...string) []Event {
	out := make([]Event, len(types))
	for i, typ := range types {
		out[i] = ev(i+1, typ)
	}
	return out
}

// taskState is a state.task_state event.
func taskState(i int, ts TaskState, reason string) Event {
	e := ev(i, TypeTaskState, AttrTaskState, string(ts))
	if reason != "" {
		e.SetAttr(AttrReason, reason)
	}
	return e
}

// project is the live projection the node runs: skip a known id, Step an
// event that sorts after the state, fold everything seen otherwise.
type project struct {
	s    State
	seen map[string]bool
	all  []Event
}

func newProject(sessionID string) *project {
	return &project{s: NewState(sessionID), seen: map[string]bool{}}
}

func (p *project) add(e Event) {
	if p.seen[e.ID] {
		return
	}
	p.seen[e.ID] = true
	p.all = append(p.all, e)
	if InOrder(&p.s, &e) {
		p.s = Step(p.s, &e)
	} else {
		p.s = Fold(slices.Clone(p.all))
	}
}

// tb is what a *testing.T and a *rapid.T share.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
}

func wantActivity(t tb, s State, want Activity) {
	t.Helper()
	if s.Activity != want {
		t.Fatalf("activity = %q (from %q), want %q", s.Activity, s.ActivitySource, want)
	}
}

func wantTaskState(t tb, s State, want TaskState) {
	t.Helper()
	if s.TaskState != want {
		t.Fatalf("task_state = %q, want %q", s.TaskState, want)
	}
}
