package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/agent"
	"github.com/harn-dev/harn/runtime/agent/tools"
	"github.com/harn-dev/harn/util/clock"
)

// testBox is a small tool box: echo (read-only), block (read-only, waits
// for release or its context), stubborn (ignores its context until
// released), write (mutating) and escape (mutating: on its context's end
// it returns, but what it started runs on).
type testBox struct {
	mu      sync.Mutex
	release chan struct{}
	started chan string
	runs    []string
}

func newTestBox() *testBox {
	return &testBox{release: make(chan struct{}), started: make(chan string, 16)}
}

func schema(s string) json.RawMessage { return json.RawMessage(s) }

var obj = schema(`{"type":"object","properties":{"path":{"type":"string"}}}`)

func (b *testBox) Specs(_, _ string) []tools.Spec {
	return []tools.Spec{
		{Name: "echo", Schema: obj, Provider: "core", Hash: "h-echo"},
		{Name: "block", Schema: obj, Provider: "core", Hash: "h-block"},
		{Name: "stubborn", Schema: obj, Provider: "core", Hash: "h-stubborn"},
		{Name: "write", Schema: obj, Provider: "core", Hash: "h-write", Mutating: true},
		{Name: "escape", Schema: obj, Provider: "core", Hash: "h-escape", Mutating: true},
	}
}
func (b *testBox) Prompt(_, _, _ string) []string    { return nil }
func (b *testBox) Instructions(_, _ string) []string { return nil }
func (b *testBox) EndStep(_, _ string)               {}
func (b *testBox) Run(ctx context.Context, c tools.Call) (tools.Result, error) {
	b.mu.Lock()
	b.runs = append(b.runs, c.Name)
	b.mu.Unlock()
	b.started <- c.Name
	switch c.Name {
	case "block":
		select {
		case <-b.release:
		case <-ctx.Done():
			return tools.Result{}, ctx.Err()
		}
	case "stubborn":
		<-b.release
	case "escape": // stops, but something it started runs on
		<-ctx.Done()
		return tools.Result{Content: "stopped; a process runs on", IsError: true}, fmt.Errorf("%w: %w", tools.ErrOutlived, ctx.Err())
	}
	return tools.Result{Content: "ran " + c.Name + " " + string(c.Args)}, nil
}

type fixture struct {
	rt     *runtime.Runtime
	ledger *runtime.MemLedger
	clock  *clock.Fake
	srv    *scripted
	box    *testBox
	ex     *agent.Executor
	events chan agent.Event
	cancel context.CancelFunc
	done   chan struct{}
}

const sess = "s1"

func newFixture(t *testing.T, replies ...reply) *fixture {
	t.Helper()
	srv := newScripted(t, replies...)
	p := agent.NewOpenAI(agent.ProviderConfig{BaseURL: srv.URL(), Key: "k", Retry: agent.Retry{Base: time.Millisecond, Max: 5 * time.Millisecond}})
	f := newFixtureWith(t, p)
	f.srv = srv
	return f
}

// newFixtureWith runs a session's loop with provider p.
func newFixtureWith(t *testing.T, p agent.Provider, opts ...func(*agent.Config)) *fixture {
	t.Helper()
	f := &fixture{ledger: runtime.NewMemLedger(), clock: runtime.NewFakeClock(), box: newTestBox(),
		events: make(chan agent.Event, 1024), done: make(chan struct{})}
	var err error
	f.rt, err = runtime.New(runtime.Config{Ledger: f.ledger, Key: []byte("k"), Clock: f.clock, Grace: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.rt.SetCatalog(agent.Catalog, agent.Capabilities(f.box.Specs("", ""))); err != nil {
		t.Fatal(err)
	}
	m, _ := agent.ModelFor("gpt-4o", 0, 0)
	if err := f.rt.OpenSession(sess, runtime.SessionConfig{Catalog: agent.Catalog, Workdir: t.TempDir(), Budget: m.Budget(0)}); err != nil {
		t.Fatal(err)
	}
	cfg := agent.Config{Runtime: f.rt, Session: sess, Provider: p, Box: f.box, Model: m,
		Grace: 10 * time.Second, Clock: f.clock,
		OnEvent: func(e agent.Event) {
			select {
			case f.events <- e:
			default:
			}
		}}
	for _, o := range opts {
		o(&cfg)
	}
	f.ex, err = agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	go func() {
		defer close(f.done)
		_ = f.ex.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-f.box.release:
		default:
			close(f.box.release)
		}
		<-f.done
	})
	return f
}

var allGrants = []runtime.Grant{{Level: runtime.Execute, Capability: "*"}}

func (f *fixture) start(t *testing.T, text string, grants []runtime.Grant) string {
	t.Helper()
	v, err := f.rt.Start(sess, runtime.Request{Text: text, Grants: grants})
	if err != nil {
		t.Fatal(err)
	}
	return v.ID
}

// waitEvent waits (bounded) for an event of type typ.
func (f *fixture) waitEvent(t *testing.T, typ string) agent.Event {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case e := <-f.events:
			if e.Type == typ {
				return e
			}
		case <-deadline:
			t.Fatalf("no %s event", typ)
		}
	}
}

func (f *fixture) records(t *testing.T, task string, kind runtime.RecordKind) []runtime.Record {
	t.Helper()
	rs, _ := f.ledger.Records(task)
	var out []runtime.Record
	for _, r := range rs {
		if r.Kind == kind {
			out = append(out, r)
		}
	}
	return out
}

func TestLoopRunsToolsUntilTheModelAnswers(t *testing.T) {
	f := newFixture(t,
		toolsReply(true, [3]string{"c1", "echo", `{"path":"a.txt"}`}),
		textReply("the file says hi"))
	close(f.box.release)
	task := f.start(t, "read a.txt", allGrants)
	end := f.waitEvent(t, agent.EvTurnEnd)
	if end.Status != "succeeded" || end.Text != "the file says hi" {
		t.Fatalf("end %+v", end)
	}
	reqs := f.srv.requests()
	if len(reqs) != 2 || !contains(messagesOf(reqs[1]), `tool:ran echo {"path":"a.txt"}`) {
		t.Fatalf("second request lacks the tool result: %v", messagesOf(reqs[len(reqs)-1]))
	}
	mc := f.records(t, task, runtime.RecModel)
	if len(mc) != 2 || mc[0].Usage == nil || mc[0].Usage.Input != 30 || mc[0].Usage.Estimated == 0 {
		t.Fatalf("model call records %+v", mc)
	}
	if b := f.records(t, task, runtime.RecBegin); len(b) != 1 || b[0].Capability != "echo" {
		t.Fatalf("call records %+v", b)
	}
}

func TestParallelToolCallsWithoutIndexMergeByID(t *testing.T) {
	f := newFixture(t,
		toolsReply(false, [3]string{"c1", "echo", `{"path":"one"}`}, [3]string{"c2", "echo", `{"path":"two"}`}),
		textReply("done"))
	close(f.box.release)
	f.start(t, "two", allGrants)
	f.waitEvent(t, agent.EvTurnEnd)
	ms := messagesOf(f.srv.requests()[1])
	if !contains(ms, `ran echo {"path":"one"}`) || !contains(ms, `ran echo {"path":"two"}`) {
		t.Fatalf("calls merged: %v", ms)
	}
}

func TestParallelToolCallsWithIndex(t *testing.T) {
	f := newFixture(t,
		toolsReply(true, [3]string{"c1", "echo", `{"path":"one"}`}, [3]string{"c2", "echo", `{"path":"two"}`}),
		textReply("done"))
	close(f.box.release)
	f.start(t, "two", allGrants)
	f.waitEvent(t, agent.EvTurnEnd)
	ms := messagesOf(f.srv.requests()[1])
	if !contains(ms, `ran echo {"path":"one"}`) || !contains(ms, `ran echo {"path":"two"}`) {
		t.Fatalf("calls: %v", ms)
	}
}

func TestRetries429And500ThenAnswers(t *testing.T) {
	f := newFixture(t,
		reply{Status: 429, Header: map[string]string{"Retry-After": "0.001"}, Body: `{"error":{"message":"slow down","type":"rate_limit"}}`},
		reply{Status: 500, Body: `{"error":{"message":"boom","type":"server_error"}}`},
		textReply("ok"))
	task := f.start(t, "hi", allGrants)
	end := f.waitEvent(t, agent.EvTurnEnd)
	if end.Status != "succeeded" {
		t.Fatalf("end %+v", end)
	}
	if mc := f.records(t, task, runtime.RecModel); len(mc) != 1 || mc[0].Usage.Retries != 2 {
		t.Fatalf("model call %+v", mc)
	}
}

func TestContextLengthErrorFailsWithoutHistory(t *testing.T) {
	f := newFixture(t,
		reply{Status: 400, Body: `{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}`})
	task := f.start(t, "hi", allGrants)
	end := f.waitEvent(t, agent.EvTurnEnd)
	if end.Status != "failed" {
		t.Fatalf("end %+v", end)
	}
	if mc := f.records(t, task, runtime.RecModel); len(mc) != 1 || mc[0].Usage.Error != "context_length" {
		t.Fatalf("model call %+v", mc[0].Usage)
	}
}

func TestContextLengthErrorRecoversWithTheCurrentTurn(t *testing.T) {
	f := newFixture(t, textReply("first"),
		reply{Status: 400, Body: `{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}`},
		textReply("second"))
	f.start(t, "one", allGrants)
	f.waitEvent(t, agent.EvTurnEnd)
	waitIdle(t, f.rt)
	f.start(t, "two", allGrants)
	end := f.waitEvent(t, agent.EvTurnEnd)
	if end.Status != "succeeded" || end.Text != "second" {
		t.Fatalf("end %+v", end)
	}
	reqs := f.srv.requests()
	if contains(messagesOf(reqs[2]), "user:one") || !contains(messagesOf(reqs[1]), "user:one") {
		t.Fatalf("the retry kept the old turn: %v", messagesOf(reqs[2]))
	}
}

func waitIdle(t *testing.T, rt *runtime.Runtime) {
	t.Helper()
	for i := 0; i < 2000; i++ {
		if v, _ := rt.Session(sess); v.Task == nil {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("session did not go idle")
}

func TestToolOutsideTheGrantsIsRefused(t *testing.T) {
	f := newFixture(t, toolsReply(true, [3]string{"c1", "write", `{"path":"x"}`}), textReply("could not"))
	task := f.start(t, "write", []runtime.Grant{{Level: runtime.Execute, Capability: "echo"}})
	if e := f.waitEvent(t, agent.EvToolRefused); e.Args != `{"path":"x"}` {
		t.Fatalf("a refused call does not carry what it asked (the TUI shows it): %q", e.Args)
	}
	f.waitEvent(t, agent.EvTurnEnd)
	if len(f.records(t, task, runtime.RecRefused)) != 1 || len(f.box.runs) != 0 {
		t.Fatalf("write ran or was not refused: %v", f.box.runs)
	}
	if ms := messagesOf(f.srv.requests()[1]); !contains(ms, "tool:refused by harn") {
		t.Fatalf("the model was not told: %v", ms)
	}
}

func TestConfirmationLetsTheCallRun(t *testing.T) {
	f := newFixture(t, toolsReply(true, [3]string{"c1", "write", `{"path":"x"}`}), textReply("wrote"))
	close(f.box.release)
	task := f.start(t, "write", []runtime.Grant{{Level: runtime.Execute, Capability: "write", Confirm: true}})
	ev := f.waitEvent(t, agent.EvInputRequested)
	if err := f.rt.Confirm(task, ev.Call, "op"); err != nil {
		t.Fatal(err)
	}
	if end := f.waitEvent(t, agent.EvTurnEnd); end.Status != "succeeded" || len(f.box.runs) != 1 {
		t.Fatalf("end %+v runs %v", end, f.box.runs)
	}
}

func TestSteerLandsAtTheStepBoundary(t *testing.T) {
	f := newFixture(t, toolsReply(true, [3]string{"c1", "block", `{}`}), textReply("steered"))
	task := f.start(t, "go", allGrants)
	<-f.box.started
	r, err := f.ex.Steer(task, "also do this")
	if err != nil || r.Mode != agent.SteerQueued {
		t.Fatalf("steer %+v %v", r, err)
	}
	if n := len(f.srv.requests()); n != 1 {
		t.Fatalf("a model call ran before the tool returned: %d", n)
	}
	close(f.box.release)
	f.waitEvent(t, agent.EvTurnEnd)
	ms := messagesOf(f.srv.requests()[1])
	if ms[len(ms)-1] != "user:also do this" || !contains(ms[len(ms)-2:len(ms)-1], "tool:ran block") {
		t.Fatalf("steer not after the tool result: %v", ms)
	}
}

func TestSteerForAnEndedTurnBecomesAFollowUp(t *testing.T) {
	f := newFixture(t, textReply("one"), textReply("two"))
	task := f.start(t, "first", allGrants)
	f.waitEvent(t, agent.EvTurnEnd)
	waitIdle(t, f.rt)
	r, err := f.ex.Steer(task, "late")
	if err != nil || r.Mode != agent.SteerFollowUp || r.Task == task {
		t.Fatalf("steer %+v %v", r, err)
	}
	if end := f.waitEvent(t, agent.EvTurnEnd); end.Task != r.Task || end.Text != "two" {
		t.Fatalf("follow-up end %+v", end)
	}
}

func TestCancelAbortsAToolThatStops(t *testing.T) {
	f := newFixture(t, toolsReply(true, [3]string{"c1", "block", `{}`}))
	task := f.start(t, "go", allGrants)
	<-f.box.started
	if _, err := f.rt.Cancel(task, "op", "stop"); err != nil {
		t.Fatal(err)
	}
	f.waitEvent(t, agent.EvTurnEnd)
	ends := f.records(t, task, runtime.RecEnd)
	if len(ends) != 1 || ends[0].Status != string(runtime.OutcomeAborted) {
		t.Fatalf("ends %+v", ends)
	}
}

func TestCancelMarksAToolThatDoesNotStopUnknown(t *testing.T) {
	f := newFixture(t, toolsReply(true, [3]string{"c1", "stubborn", `{}`}))
	task := f.start(t, "go", allGrants)
	<-f.box.started
	if _, err := f.rt.Cancel(task, "op", "stop"); err != nil {
		t.Fatal(err)
	}
	// Before the grace period the call is open: nothing settled it.
	if ends := f.records(t, task, runtime.RecEnd); len(ends) != 0 {
		t.Fatalf("settled before the grace period: %+v", ends)
	}
	for i := 0; i < 2000 && f.clock.Waiters() < 2; i++ { // the runtime's and the loop's grace timers
		time.Sleep(time.Millisecond)
	}
	f.clock.Advance(10 * time.Second)
	f.waitEvent(t, agent.EvTurnEnd)
	ends := f.records(t, task, runtime.RecEnd)
	if len(ends) != 1 || ends[0].Status != string(runtime.OutcomeUnknown) {
		t.Fatalf("ends %+v", ends)
	}
	v, _ := f.rt.Task(task)
	if v.Status != runtime.StatusCancelled {
		t.Fatalf("task %+v", v)
	}
}

// A tool that stops on the cancel but reports that something it started
// runs on (a shell's process that left its group) is outcome_unknown at
// once, without waiting for the grace period, and holds later mutations.
func TestCancelMarksAToolWhoseProcessOutlivedItUnknown(t *testing.T) {
	f := newFixture(t, toolsReply(true, [3]string{"c1", "escape", `{}`}))
	task := f.start(t, "go", allGrants)
	<-f.box.started
	if _, err := f.rt.Cancel(task, "op", "stop"); err != nil {
		t.Fatal(err)
	}
	post := f.waitEvent(t, agent.EvToolPost) // the clock never moves: no grace period ran out
	if post.Outcome != string(runtime.OutcomeUnknown) {
		t.Fatalf("tool.post %+v", post)
	}
	f.waitEvent(t, agent.EvTurnEnd)
	ends := f.records(t, task, runtime.RecEnd)
	if len(ends) != 1 || ends[0].Status != string(runtime.OutcomeUnknown) {
		t.Fatalf("ends %+v", ends)
	}
	sv, err := f.rt.Session(sess)
	if err != nil || len(sv.AwaitingAck) != 1 || sv.AwaitingAck[0] != task {
		t.Fatalf("the unknown mutation is not held for ack: %+v %v", sv, err)
	}
}

func TestProviderErrorIsTyped(t *testing.T) {
	p := agent.NewOpenAI(agent.ProviderConfig{BaseURL: newScripted(t, reply{Status: 401, Body: `{"error":{"message":"bad key"}}`}).URL(), Key: "k"})
	_, err := p.Complete(context.Background(), agent.Request{Model: "m"}, nil)
	var se *agent.StatusError
	if !errors.As(err, &se) || se.Code != 401 || !errors.Is(err, agent.ErrProvider) {
		t.Fatalf("err %v", err)
	}
}

// TestALaterTurnTakesNoHandoff: the context holds the session's
// conversation, so a second turn started in an idle session (it has no
// predecessor, so no final message or digest to take) has its text alone
// as its prompt, and the first turn is in the request once. A follow-up
// takes its predecessor's final and digest: node/tasks'
// TestWhatASuccessorReceives.
func TestALaterTurnTakesNoHandoff(t *testing.T) {
	f := newFixture(t, textReply("first answer"), textReply("second answer"))
	f.start(t, "one", allGrants)
	f.waitEvent(t, agent.EvTurnEnd)
	waitIdle(t, f.rt)
	f.start(t, "two", allGrants)
	f.waitEvent(t, agent.EvTurnEnd)
	ms := messagesOf(f.srv.requests()[1])
	want := []string{"system:" + agent.SystemPrompt, "user:one", "assistant:first answer", "user:two"}
	if len(ms) != len(want) {
		t.Fatalf("messages %q, want %q", ms, want)
	}
	for i := range want {
		if ms[i] != want[i] {
			t.Fatalf("messages %q, want %q", ms, want)
		}
	}
}
