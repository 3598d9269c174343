package tasks

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/util/clock"
)

type captureSink struct {
	mu  sync.Mutex
	evs []presence.Event
}

func (c *captureSink) Ingest(evs []presence.Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evs = append(c.evs, evs...)
	return nil
}

func TestHostedSessionsLeftByThePreviousRunEndWithNodeRestart(t *testing.T) {
	kv := &memKV{}
	l := NewLedger(kv)
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	put := func(r runtime.Record) {
		t.Helper()
		r.V, r.TS = runtime.RecordVersion, ts
		if err := l.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	// open: submitted then running; done: terminal; queued: only submitted.
	put(runtime.Record{Seq: 1, Session: "h-1", Task: "t-open", Kind: runtime.RecSubmit, Status: "start"})
	put(runtime.Record{Seq: 2, Session: "h-1", Task: "t-open", Kind: runtime.RecState, State: runtime.StateRunning})
	put(runtime.Record{Seq: 3, Session: "h-1", Task: "t-open", Kind: runtime.RecBegin, Call: "c1"})
	put(runtime.Record{Seq: 1, Session: "h-1", Task: "t-done", Kind: runtime.RecSubmit, Status: "start"})
	put(runtime.Record{Seq: 2, Session: "h-1", Task: "t-done", Kind: runtime.RecState, State: runtime.StateTerminal, Status: "succeeded"})
	put(runtime.Record{Seq: 1, Session: "cc1", Task: "t-queued", Kind: runtime.RecSubmit, Status: "follow_up"})
	sink := &captureSink{}
	h, err := New(Config{Node: "n1", KV: kv, Key: bytes.Repeat([]byte{7}, 32), Clock: clock.NewFake(ts), Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	live := []presence.State{
		{SessionID: "h-1", Agent: Agent, Node: "n1", Events: 3},
		{SessionID: "h-2", Agent: Agent, Events: 1},
		{SessionID: "h-other", Agent: Agent, Node: "n2", Events: 1}, // another node's
		{SessionID: "cc1", Agent: "claude-code", Node: "n1", Events: 5},
		{SessionID: "h-gone", Agent: Agent, Node: "n1", Events: 2, Ended: true},
	}
	got, err := h.Recover(live)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"h-1", "h-2"}; !slices.Equal(got.Sessions, want) {
		t.Errorf("ended sessions %v, want %v", got.Sessions, want)
	}
	if want := []string{"t-open", "t-queued"}; !slices.Equal(got.Tasks, want) {
		t.Errorf("closed tasks %v, want %v", got.Tasks, want)
	}
	for _, e := range sink.evs {
		if e.Type != presence.TypeSessionEnd || e.Agent != Agent || e.AttrString(presence.AttrReason) != ReasonNodeRestart {
			t.Errorf("event %+v: want session.end of agent harn with reason node_restart", e)
		}
	}
	if len(sink.evs) != 2 {
		t.Errorf("%d events, want 2", len(sink.evs))
	}
	recs, err := l.Records("t-open")
	if err != nil {
		t.Fatal(err)
	}
	last := recs[len(recs)-1]
	if len(recs) != 5 || last.Seq != 5 || last.State != runtime.StateTerminal || last.Status != string(runtime.StatusFailed) ||
		last.Reason != ReasonNodeRestart || last.Session != "h-1" {
		t.Errorf("t-open records end with %+v (%d records)", last, len(recs))
	}
	// its call c1, running when the node died, settled first: unknown
	if end := recs[3]; end.Kind != runtime.RecEnd || end.Call != "c1" || end.Status != string(runtime.OutcomeUnknown) || end.Reason != ReasonNodeRestart {
		t.Errorf("t-open's running call settled as %+v; want outcome_unknown, node_restart", end)
	}
	if recs, _ := l.Records("t-done"); len(recs) != 2 {
		t.Errorf("a terminal task got %d records, want its 2", len(recs))
	}
	// A second start finds nothing left to close.
	again, err := h.Recover(nil)
	if err != nil || len(again.Tasks) != 0 {
		t.Errorf("second Recover closed %v (%v), want nothing", again.Tasks, err)
	}
}

// TestACallRunningWhenTheNodeDiedIsOutcomeUnknownAndHeldForAck: a task's
// mutating call that was running when the node died (begun, never ended)
// is settled at the restart as outcome_unknown, so its session's
// mutations are refused until `harn task ack`; a read-only one is
// outcome_unknown and holds nothing; one that waited for a confirmation
// never ran: denied. Before, the step read `running` forever.
func TestACallRunningWhenTheNodeDiedIsOutcomeUnknownAndHeldForAck(t *testing.T) {
	kv := &memKV{}
	l := NewLedger(kv)
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, r := range []runtime.Record{
		{Seq: 1, Session: "h-1", Task: "t-1", Kind: runtime.RecSubmit, Status: "start"},
		{Seq: 2, Session: "h-1", Task: "t-1", Kind: runtime.RecState, State: runtime.StateRunning},
		{Seq: 3, Session: "h-1", Task: "t-1", Kind: runtime.RecBegin, Call: "w", Capability: "shell", Status: "running"},
		{Seq: 4, Session: "h-1", Task: "t-1", Kind: runtime.RecBegin, Call: "r", Capability: "read", Status: "running", ReadOnly: true},
		{Seq: 5, Session: "h-1", Task: "t-1", Kind: runtime.RecBegin, Call: "p", Capability: "write", Status: "pending"},
	} {
		r.V, r.TS = runtime.RecordVersion, ts
		if err := l.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	h := restart(t, kv, ts.Add(time.Minute), []presence.State{{SessionID: "h-1", Agent: Agent, Node: "n1", Events: 2}})
	defer h.Close()
	recs, _ := l.Records("t-1")
	steps, _ := Steps(recs)
	got := map[string]string{}
	for _, s := range steps {
		got[s.Call] = s.Outcome
	}
	if got["w"] != "outcome_unknown" || got["r"] != "outcome_unknown" || got["p"] != "denied" {
		t.Fatalf("the calls after the restart: %v; want w and r outcome_unknown, p denied", got)
	}
	sv, err := h.Runtime().Session("h-1")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sv.AwaitingAck, []string{"t-1"}) {
		t.Fatalf("the session awaits ack of %v; want t-1 (its mutating call's outcome is unknown)", sv.AwaitingAck)
	}
	// a later task of the session: its mutation is refused, naming the ack
	rt := h.Runtime()
	if _, err := rt.Start("h-1", runtime.Request{Text: "again", Grants: fullGrants(t)}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	run, err := rt.Next(ctx, "h-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Begin(runtime.CallRequest{ID: "w2", Capability: "Write", Input: []byte(`{"file_path":"a"}`)}); err == nil ||
		!strings.Contains(err.Error(), "harn task ack t-1") {
		t.Fatalf("a mutation while the unknown outcome is held: %v; want a refusal naming `harn task ack t-1`", err)
	}
	if err := h.Runtime().Ack("t-1", "ann"); err != nil {
		t.Fatalf("ack: %v", err)
	}
	if sv, _ := h.Runtime().Session("h-1"); len(sv.AwaitingAck) != 0 {
		t.Fatalf("after the ack the session still awaits %v", sv.AwaitingAck)
	}
	if _, err := run.Begin(runtime.CallRequest{ID: "w3", Capability: "Write", Input: []byte(`{"file_path":"a"}`)}); err != nil {
		t.Fatalf("a mutation after the ack: %v", err)
	}
}
