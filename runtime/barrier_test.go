package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestCancellationMovesThroughCancellingQuiescingTerminal(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", nil)
	run := f.next(t)
	c := f.begin(t, a, "write_file", `{"file_path":"x"}`)
	if _, err := f.rt.Cancel(a, "op", "wrong repo"); err != nil {
		t.Fatal(err)
	}
	f.wantState(t, a, StateCancelling, StatusCancelled)
	_ = run.Finish(StatusFailed, "stopped")
	f.wantState(t, a, StateQuiescing, StatusCancelled)
	_ = c.End(OutcomeSucceeded, []byte("wrote"))
	f.wantState(t, a, StateTerminal, StatusCancelled)
	var states []State
	recs, _ := f.led.Records(a)
	for _, r := range recs {
		if r.Kind == RecState {
			states = append(states, r.State)
		}
	}
	want := []State{StateRunning, StateCancelling, StateQuiescing, StateTerminal}
	if !slices.Equal(states, want) {
		t.Fatalf("ledger states %v, want %v", states, want)
	}
	if !slices.ContainsFunc(recs, func(r Record) bool { return r.Kind == RecCancel && r.Reason == "wrong repo" && r.By == "op" }) {
		t.Fatal("the cancellation is not in the ledger")
	}
}

func TestCancellationStopsNewCallsAndAbortsRunningOnes(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", []Grant{{Level: Execute, Capability: "read_file"}, {Level: Execute, Capability: "write_file", Confirm: true}})
	running := f.begin(t, a, "read_file", `{}`)
	waiting := f.begin(t, a, "write_file", `{}`)
	_, _ = f.rt.Cancel(a, "", "")
	if running.Context().Err() == nil {
		t.Fatal("a running call got no abort signal")
	}
	if err := waiting.Wait(t.Context()); !errors.Is(err, ErrDenied) {
		t.Fatalf("a call waiting for confirmation: %v", err)
	}
	_, err := f.rt.Begin(a, f.req("read_file", `{}`))
	wantErr(t, err, ErrTaskCancelling)
	wantCheck(t, err, CheckTask)
}

func TestBarrierWaitsForEachCallToFinishAcknowledgeOrReachOutcomeUnknown(t *testing.T) {
	for _, how := range []string{"finish", "acknowledge", "unknown"} {
		t.Run(how, func(t *testing.T) {
			f := newFixture(t)
			a := f.start(t, "a", nil)
			f.next(t)
			c1 := f.begin(t, a, "read_file", `{}`)
			c2 := f.begin(t, a, "write_file", `{}`)
			b, _ := f.rt.Supersede(testSession, Request{Text: "b"})
			_ = f.rt.Finish(a, StatusFailed, "") // the executor stopped
			_ = c1.End(OutcomeSucceeded, nil)
			f.wantState(t, a, StateQuiescing, StatusSuperseded)
			f.clk.Advance(testGrace - 1)
			f.wantState(t, b.ID, StateQueued, "")
			switch how {
			case "finish":
				_ = c2.End(OutcomeFailed, []byte("x"))
			case "acknowledge":
				_ = f.rt.AckAbort(a, c2.ID)
			case "unknown":
				f.clk.Advance(1)
			}
			f.wantState(t, a, StateTerminal, StatusSuperseded)
			f.wantState(t, b.ID, StateRunning, "")
			recs, _ := f.led.Records(a)
			// The call's end, then the terminal state (then the lift of
			// its refusal, when b starts).
			i := slices.IndexFunc(recs, func(r Record) bool { return r.Kind == RecState && r.State == StateTerminal })
			if i < 1 {
				t.Fatalf("no terminal state after a record: %+v", recs)
			}
			last := recs[i-1]
			want := map[string]Outcome{"finish": OutcomeFailed, "acknowledge": OutcomeAborted, "unknown": OutcomeUnknown}[how]
			if last.Kind != RecEnd || last.Call != c2.ID || last.Status != string(want) {
				t.Fatalf("last call record %+v, want %s", last, want)
			}
			if how == "unknown" {
				wantErr(t, c2.End(OutcomeSucceeded, nil), ErrCallSettled)
			}
		})
	}
}

func TestBarrierAbandonsAnExecutorThatNeverStops(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", nil)
	f.next(t)
	b, _ := f.rt.Supersede(testSession, Request{Text: "b"})
	f.clk.Advance(testGrace)
	f.wantState(t, a, StateTerminal, StatusSuperseded)
	f.wantState(t, b.ID, StateRunning, "")
	wantErr(t, f.rt.Finish(a, StatusSucceeded, ""), ErrTaskTerminal)
}

func TestNoRollbackMutationsWaitForAcknowledgementAfterAnUnknownOutcome(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", nil)
	f.begin(t, a, "write_file", `{"file_path":"x"}`)
	b, _ := f.rt.Supersede(testSession, Request{Text: "b"})
	f.clk.Advance(testGrace)
	f.wantState(t, b.ID, StateRunning, "")
	// read-only work goes on
	if _, err := f.rt.Check(b.ID, f.req("read_file", `{}`)); err != nil {
		t.Fatal(err)
	}
	_, err := f.rt.Begin(b.ID, f.req("write_file", `{}`))
	var ar *AckRequiredError
	if !errors.As(err, &ar) || ar.Task != a || !errors.Is(err, ErrAwaitingAck) {
		t.Fatalf("a mutation after an unknown outcome: %v", err)
	}
	if !strings.Contains(err.Error(), "harn task ack "+a) || !strings.Contains(err.Error(), ar.Call) {
		t.Fatalf("the refusal's text must name the task to acknowledge and its call: %v", err)
	}
	wantCheck(t, err, CheckAck)
	sv, _ := f.rt.Session(testSession)
	if !slices.Equal(sv.AwaitingAck, []string{a}) {
		t.Fatalf("awaiting ack %v", sv.AwaitingAck)
	}
	wantErr(t, f.rt.Ack(b.ID, "op"), ErrNothingToAck)
	if err := f.rt.Ack(a, "op"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.rt.Begin(b.ID, f.req("write_file", `{}`)); err != nil {
		t.Fatal(err)
	}
}

func TestReadOnlyCallEndingUnknownHoldsNothing(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", nil)
	f.begin(t, a, "read_file", `{}`)
	b, _ := f.rt.Supersede(testSession, Request{Text: "b"})
	f.clk.Advance(testGrace)
	if _, err := f.rt.Check(b.ID, f.req("write_file", `{}`)); err != nil {
		t.Fatal(err)
	}
}

func TestLedgerKeepsKeyedDigestsOfEvidenceNeverRaw(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", nil)
	secretIn := `{"file_path":"/w/SECRET-INPUT"}`
	c := f.begin(t, a, "write_file", secretIn)
	_ = c.End(OutcomeSucceeded, []byte("SECRET-OUTPUT"))
	_, _ = f.rt.Begin(a, f.req("nope", `{"x":"SECRET-REFUSED"}`))
	recs, _ := f.led.Records(a)
	d, _ := NewDigester([]byte("test-node-key"))
	var sawIn, sawOut, sawRefused bool
	for _, r := range recs {
		b, _ := EncodeRecord(r)
		if bytes.Contains(b, []byte("SECRET")) {
			t.Fatalf("raw evidence in the ledger: %s", b)
		}
		back, err := DecodeRecord(b)
		if err != nil {
			t.Fatalf("decode %s: %v", b, err)
		}
		if back.Seq != r.Seq || back.Kind != r.Kind {
			t.Fatalf("round trip %+v → %+v", r, back)
		}
		sawIn = sawIn || (r.Kind == RecBegin && r.Input == d.Digest([]byte(secretIn)))
		sawOut = sawOut || (r.Kind == RecEnd && r.Output == d.Digest([]byte("SECRET-OUTPUT")))
		sawRefused = sawRefused || (r.Kind == RecRefused && r.Status == string(CheckCatalog) && r.Input != "")
	}
	if !sawIn || !sawOut || !sawRefused {
		t.Fatalf("digests missing: in %v out %v refused %v", sawIn, sawOut, sawRefused)
	}
	other, _ := NewDigester([]byte("another key"))
	if other.Digest([]byte(secretIn)) == d.Digest([]byte(secretIn)) {
		t.Fatal("the digest does not depend on the key")
	}
}

func TestLedgerFailureRefusesTheCall(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", nil)
	f.led.FailWith(errors.New("disk full"))
	_, err := f.rt.Begin(a, f.req("read_file", `{}`))
	wantErr(t, err, ErrLedger)
	f.led.FailWith(nil)
	if v := f.state(t, a); v.State != StateRunning {
		t.Fatalf("%+v", v)
	}
}

func TestDecodeRecordRefusesOtherVersionsAndRawEvidence(t *testing.T) {
	cases := map[string]error{
		`{"v":2,"ts":"2026-08-12T10:00:00Z","task":"t","kind":"call.end"}`:                      ErrRecordVersion,
		`{"ts":"2026-08-12T10:00:00Z","task":"t","kind":"call.end"}`:                            ErrRecordVersion,
		`{"v":1,"ts":"2026-08-12T10:00:00Z","task":"t","kind":"call.end","input":"rm -rf /"}`:   ErrBadRecord,
		`{"v":1,"ts":"2026-08-12T10:00:00Z","task":"t","kind":"call.bogus"}`:                    ErrBadRecord,
		`{"v":1,"ts":"2026-08-12T10:00:00Z","task":"t","kind":"call.end","extra":1}`:            ErrBadRecord,
		`{"v":1,"task":"t","kind":"call.end"}`:                                                  ErrBadRecord,
		`{"v":1,"ts":"2026-08-12T10:00:00Z","task":"t","kind":"task.state","state":"sleeping"}`: ErrBadRecord,
	}
	for in, want := range cases {
		if _, err := DecodeRecord([]byte(in)); !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", in, err, want)
		}
	}
}

func TestSuccessorReceivesConversationFinalMessageAndRedactedDigestOnly(t *testing.T) {
	f := newFixture(t)
	// The predecessor may call shell and search; the successor may not discover shell.
	a := f.start(t, "fix the build", []Grant{{Level: Execute, Capability: "*"}})
	run := f.next(t)
	_ = run.Say("looking at the build")
	_, _ = f.rt.Load(a, "shell")
	_, _ = f.rt.Load(a, "search")
	_, _ = f.rt.Activate(a, "review", true)
	c := f.begin(t, a, "shell", `{"command":"make SECRET-CMD"}`)
	_ = c.End(OutcomeFailed, []byte("SECRET-OUT"))
	c = f.begin(t, a, "search", `{"q":"SECRET-Q"}`)
	_ = c.End(OutcomeSucceeded, nil)
	_, _ = f.rt.Begin(a, f.req("nope", `{}`))
	succGrants := []Grant{{Level: Execute, Capability: "search"}, {Level: Execute, Capability: "read_file"}}
	fu, _ := f.rt.FollowUp(testSession, Request{Text: "then deploy", Grants: succGrants})
	_ = run.Say("after the follow-up was queued")
	_ = run.Finish(StatusFailed, "the build still fails")
	succ := f.next(t)
	if succ.Task != fu.ID {
		t.Fatalf("next gave %s", succ.Task)
	}
	h := succ.Handoff
	wantConv := []Message{{Role: "user", Task: a, Text: "fix the build"}, {Role: "assistant", Task: a, Text: "looking at the build"}}
	if !slices.Equal(h.Conversation, wantConv) {
		t.Fatalf("conversation %+v, want %+v", h.Conversation, wantConv)
	}
	if h.PredecessorFinal != "the build still fails" {
		t.Fatalf("final %q", h.PredecessorFinal)
	}
	d := h.Digest
	if d == nil || d.Predecessor != a || d.Status != StatusFailed || d.Calls.Started != 2 || d.Calls.Failed != 1 ||
		d.Calls.Succeeded != 1 || d.Calls.Refused != 1 {
		t.Fatalf("digest %+v", d)
	}
	if !slices.Equal(d.Capabilities, []CapabilityCalls{{Name: "search", Calls: 1}}) {
		t.Fatalf("capability names %+v: only what the successor may discover", d.Capabilities)
	}
	// Nothing else: the JSON has exactly these fields, and no trace of
	// tool traffic, bindings, context or undiscoverable names.
	b, _ := json.Marshal(h)
	var top map[string]json.RawMessage
	_ = json.Unmarshal(b, &top)
	if keys := sortedKeys(top); !slices.Equal(keys, []string{"conversation", "digest", "predecessor_final"}) {
		t.Fatalf("handoff fields %v", keys)
	}
	var dm map[string]json.RawMessage
	_ = json.Unmarshal(top["digest"], &dm)
	if keys := sortedKeys(dm); !slices.Equal(keys, []string{"calls", "capabilities", "predecessor", "status"}) {
		t.Fatalf("digest fields %v", keys)
	}
	for _, leak := range []string{"SECRET", "shell", "exec", "web", "fs", "skills", "review", "h-", "after the follow-up", "tokens", "loaded", "generation"} {
		if strings.Contains(string(b), leak) {
			t.Fatalf("the handoff leaks %q: %s", leak, b)
		}
	}
	got, _ := f.rt.Digest(fu.ID)
	if g, _ := json.Marshal(got); !bytes.Equal(g, b) {
		t.Fatalf("Digest(%s) differs from what the successor received", fu.ID)
	}
}

func TestASupersedingSuccessorReceivesTheDigestToo(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", nil)
	f.begin(t, a, "read_file", `{}`)
	b, _ := f.rt.Supersede(testSession, Request{Text: "b"})
	f.clk.Advance(testGrace)
	h, err := f.rt.Digest(b.ID)
	if err != nil || h.Digest == nil || h.Digest.Status != StatusSuperseded || h.Digest.Calls.Unknown != 1 {
		t.Fatalf("%+v %v", h, err)
	}
	// A task started in an idle session is nobody's successor.
	_ = f.rt.Finish(b.ID, StatusSucceeded, "")
	c := f.start(t, "c", nil)
	if h, _ := f.rt.Digest(c); h.Digest != nil || h.PredecessorFinal != "" {
		t.Fatalf("a started task got a digest %+v", h)
	}
}

func sortedKeys(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
