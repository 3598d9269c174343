package runtime

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// propModel drives one session with random operator actions, executor
// reports and clock moves, and checks the invariants after each step.
type propModel struct {
	f        *fixture
	tasks    []string
	calls    []propCall
	runs     map[string]bool
	ceilings map[string]map[string]Level
}

type propCall struct{ task, id string }

func (m *propModel) pickTask(t *rapid.T) string {
	if len(m.tasks) == 0 {
		return "t-none"
	}
	return rapid.SampledFrom(m.tasks).Draw(t, "task")
}

func (m *propModel) add(v TaskView, err error) {
	if err == nil {
		m.tasks = append(m.tasks, v.ID)
	}
}

var propGrants = [][]Grant{
	{{Level: Execute, Capability: "*"}},
	{{Level: Execute, Capability: "read_file"}, {Level: Execute, Capability: "write_file", Confirm: true}},
	{{Level: Execute, Capability: "*"}, {Level: Inspect, Capability: "write_file"}},
}

func (m *propModel) actions() map[string]func(*rapid.T) {
	rt := m.f.rt
	text := func(t *rapid.T) string { return rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "text") }
	grants := func(t *rapid.T) []Grant { return rapid.SampledFrom(propGrants).Draw(t, "grants") }
	return map[string]func(*rapid.T){
		"start": func(t *rapid.T) { m.add(rt.Start(testSession, Request{Text: text(t), Grants: grants(t)})) },
		"followUp": func(t *rapid.T) {
			m.add(rt.FollowUp(testSession, Request{Text: text(t), Grants: grants(t), RequiresSuccess: rapid.Bool().Draw(t, "req")}))
		},
		"supersede": func(t *rapid.T) { m.add(rt.Supersede(testSession, Request{Text: text(t), Grants: grants(t)})) },
		"steer":     func(t *rapid.T) { _, _ = rt.Steer(testSession, text(t)) },
		"cancel":    func(t *rapid.T) { _, _ = rt.Cancel(m.pickTask(t), "op", "") },
		"resume":    func(t *rapid.T) { _, _ = rt.Resume(m.pickTask(t)) },
		"replace":   func(t *rapid.T) { m.add(rt.Replace(m.pickTask(t), text(t))) },
		"next": func(t *rapid.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if r, err := rt.Next(ctx, testSession); err == nil {
				m.runs[r.Task] = true
			}
		},
		"begin": func(t *rapid.T) {
			name := rapid.SampledFrom([]string{"read_file", "write_file"}).Draw(t, "cap")
			task := m.pickTask(t)
			if c, err := rt.Begin(task, m.f.req(name, `{"file_path":"x"}`)); err == nil {
				m.calls = append(m.calls, propCall{task, c.ID})
			}
		},
		"end": func(t *rapid.T) {
			if len(m.calls) == 0 {
				return
			}
			c := rapid.SampledFrom(m.calls).Draw(t, "call")
			o := rapid.SampledFrom([]Outcome{OutcomeSucceeded, OutcomeFailed, OutcomeAborted}).Draw(t, "outcome")
			_ = rt.End(c.task, c.id, o, nil)
		},
		"answer": func(t *rapid.T) {
			if len(m.calls) == 0 {
				return
			}
			c := rapid.SampledFrom(m.calls).Draw(t, "call")
			if rapid.Bool().Draw(t, "yes") {
				_ = rt.Confirm(c.task, c.id, "op")
			} else {
				_ = rt.Deny(c.task, c.id, "op", "no")
			}
		},
		"finish": func(t *rapid.T) {
			st := rapid.SampledFrom([]Status{StatusSucceeded, StatusFailed}).Draw(t, "status")
			_ = rt.Finish(m.pickTask(t), st, "final")
		},
		"advance": func(t *rapid.T) {
			m.f.clk.Advance(time.Duration(rapid.IntRange(0, 6).Draw(t, "secs")) * time.Second)
		},
		"ack": func(t *rapid.T) { _ = rt.Ack(m.pickTask(t), "op") },
		"reduce": func(t *rapid.T) {
			name := rapid.SampledFrom([]string{"read_file", "write_file", "*"}).Draw(t, "pattern")
			lvl := Level(rapid.IntRange(0, 4).Draw(t, "level"))
			err := rt.Reduce(m.pickTask(t), name, lvl, "")
			if err != nil && !errors.Is(err, ErrCeilingGrows) && !errors.Is(err, ErrNoTask) && !errors.Is(err, ErrTaskTerminal) {
				t.Fatalf("reduce: %v", err)
			}
		},
		"": m.check,
	}
}

// check asserts the invariants.
func (m *propModel) check(t *rapid.T) {
	// One task at the head of the session at any time.
	head := 0
	for _, id := range m.tasks {
		v, err := m.f.rt.Task(id)
		if err != nil {
			continue
		}
		switch v.State {
		case StateRunning, StateCancelling, StateQuiescing, StateBlocked:
			head++
		}
	}
	if head > 1 {
		t.Fatalf("%d tasks hold the session at once", head)
	}
	// The ceiling never grows.
	for _, id := range m.tasks {
		g, err := m.f.rt.Grants(id)
		if err != nil {
			continue
		}
		prev := m.ceilings[id]
		now := map[string]Level{}
		for _, h := range g.Ceiling {
			l, _ := ParseLevel(h.Level)
			now[h.Capability] = l
			if p, ok := prev[h.Capability]; ok && l > p {
				t.Fatalf("task %s: %s grew from %s to %s", id, h.Capability, p, l)
			}
		}
		m.ceilings[id] = now
	}
	checkLedger(t, m.f.led.All())
}

// checkLedger asserts, over the ledger's order: a task starts only after
// every task that ran before it is terminal, and nothing of a terminal
// task's calls happens after; no mutation starts after a mutating call's
// unknown outcome until its task is acknowledged.
func checkLedger(t *rapid.T, recs []Record) {
	ran := map[string]bool{}
	ended := map[string]bool{}
	held := map[string]bool{}
	mutating := map[string]bool{"write_file": true}
	for i, r := range recs {
		switch {
		case r.Kind == RecState && r.State == StateRunning:
			for id := range ran {
				if !ended[id] {
					t.Fatalf("record %d: %s started while %s had not passed the barrier", i, r.Task, id)
				}
			}
			ran[r.Task] = true
		case r.Kind == RecState && r.State == StateTerminal:
			ended[r.Task] = true
		case r.Kind == RecBegin || r.Kind == RecEnd || r.Kind == RecConfirm:
			if ended[r.Task] {
				t.Fatalf("record %d: call activity %+v after its task ended", i, r)
			}
		}
		starts := (r.Kind == RecBegin && r.Status == "running") || r.Kind == RecConfirm
		if starts && mutating[r.Capability] && len(held) > 0 {
			t.Fatalf("record %d: mutation %s ran while %v wait for ack", i, r.Call, held)
		}
		if r.Kind == RecEnd && r.Status == string(OutcomeUnknown) && mutating[r.Capability] {
			held[r.Task] = true
		}
		if r.Kind == RecAck {
			delete(held, r.Task)
		}
	}
}

func TestPropTaskStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &propModel{f: newFixture(t), runs: map[string]bool{}, ceilings: map[string]map[string]Level{}}
		t.Repeat(m.actions())
	})
}

// TestPropSupersedingWorkNeverStartsBeforeTheBarrier aims at the barrier:
// a task with hung calls is superseded again and again.
func TestPropSupersedingWorkNeverStartsBeforeTheBarrier(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := newFixture(t)
		a := f.start(t, "a", nil)
		for i := range rapid.IntRange(1, 8).Draw(t, "rounds") {
			for range rapid.IntRange(0, 3).Draw(t, "calls") {
				_, _ = f.rt.Begin(a, f.req(rapid.SampledFrom([]string{"read_file", "write_file"}).Draw(t, "cap"), "{}"))
			}
			if rapid.Bool().Draw(t, "attach") {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				_, _ = f.rt.Next(ctx, testSession)
			}
			v, err := f.rt.Supersede(testSession, Request{Text: fmt.Sprint("r", i)})
			if err != nil {
				t.Fatal(err)
			}
			if rapid.Bool().Draw(t, "finish") {
				_ = f.rt.Finish(a, StatusFailed, "")
			}
			f.clk.Advance(time.Duration(rapid.IntRange(0, 6).Draw(t, "secs")) * time.Second)
			checkLedger(t, f.led.All())
			if id, ok := f.rt.ActiveTask(testSession); ok {
				a = id
			} else {
				a = v.ID
			}
			_ = f.rt.Ack(a, "op")
		}
	})
}
