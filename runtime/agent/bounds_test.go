package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/agent"
)

// boundedFixture runs a session's loop whose provider and loop both take
// b.
func boundedFixture(t *testing.T, b agent.Bounds, replies ...reply) *fixture {
	t.Helper()
	srv := newScripted(t, replies...)
	p := agent.NewOpenAI(agent.ProviderConfig{BaseURL: srv.URL(), Key: "k", Retry: fastRetry, Bounds: b})
	f := newFixtureWith(t, p, func(c *agent.Config) { c.Bounds = b })
	f.srv = srv
	close(f.box.release)
	return f
}

// overBound checks that a task ended failed for the bound named by class,
// its last model.call record saying so, and its final text naming flag.
func overBound(t *testing.T, f *fixture, task string, end agent.Event, class, flag string) {
	t.Helper()
	if end.Status != "failed" || !strings.Contains(end.Text, flag) {
		t.Fatalf("end %+v; want failed, naming --%s", end, flag)
	}
	mc := f.records(t, task, runtime.RecModel)
	if len(mc) == 0 {
		t.Fatal("no model.call record")
	}
	last := mc[len(mc)-1]
	if last.Usage == nil || last.Usage.Error != class || !strings.Contains(last.Reason, flag) {
		t.Fatalf("model.call record %+v (usage %+v); want error %s with a reason naming --%s", last, last.Usage, class, flag)
	}
}

// TestAnAnswerOverTheByteBoundEndsTheStep: an answer of exactly the
// bound's bytes is the task's answer; one byte more ends the step with an
// error in the ledger (answer_over_bound, naming the flag) and the task
// fails saying why.
func TestAnAnswerOverTheByteBoundEndsTheStep(t *testing.T) {
	const bound = 1000
	f := boundedFixture(t, agent.Bounds{AnswerBytes: bound},
		textReply(strings.Repeat("a", bound)), textReply(strings.Repeat("b", bound+1)))
	f.start(t, "at the bound", allGrants)
	if end := f.waitEvent(t, agent.EvTurnEnd); end.Status != "succeeded" || len(end.Text) != bound {
		t.Fatalf("an answer of %d bytes: %+v", bound, end.Status)
	}
	waitIdle(t, f.rt)
	task := f.start(t, "over it", allGrants)
	overBound(t, f, task, f.waitEvent(t, agent.EvTurnEnd), "answer_over_bound", agent.FlagAnswerBytes)
}

// TestToolArgumentsCountAgainstTheAnswerBound: a tool call's name and
// arguments are part of the answer's bytes.
func TestToolArgumentsCountAgainstTheAnswerBound(t *testing.T) {
	args := `{"path":"` + strings.Repeat("x", 2000) + `"}`
	f := boundedFixture(t, agent.Bounds{AnswerBytes: 1000}, toolsReply(true, [3]string{"c1", "echo", args}))
	task := f.start(t, "big args", allGrants)
	overBound(t, f, task, f.waitEvent(t, agent.EvTurnEnd), "answer_over_bound", agent.FlagAnswerBytes)
	if len(f.box.runs) != 0 {
		t.Fatalf("tools ran: %v", f.box.runs)
	}
}

// TestToolCallsOverTheBoundEndTheStep: a step of exactly the bound's tool
// calls runs them; one call more ends the step before any call runs.
func TestToolCallsOverTheBoundEndTheStep(t *testing.T) {
	calls := func(n int) [][3]string {
		var out [][3]string
		for i := range n {
			out = append(out, [3]string{fmt.Sprintf("c%d", i), "echo", `{"path":"a"}`})
		}
		return out
	}
	f := boundedFixture(t, agent.Bounds{ToolCalls: 3},
		toolsReply(true, calls(3)...), textReply("done"), toolsReply(true, calls(4)...))
	f.start(t, "three calls", allGrants)
	if end := f.waitEvent(t, agent.EvTurnEnd); end.Status != "succeeded" || len(f.box.runs) != 3 {
		t.Fatalf("3 calls at a bound of 3: %+v, ran %v", end, f.box.runs)
	}
	waitIdle(t, f.rt)
	task := f.start(t, "four calls", allGrants)
	overBound(t, f, task, f.waitEvent(t, agent.EvTurnEnd), "tool_calls_over_bound", agent.FlagToolCalls)
	if len(f.box.runs) != 3 {
		t.Fatalf("a call of the refused step ran: %v", f.box.runs)
	}
}

// TestStepsOverTheBoundEndTheTask: a task of exactly the bound's model
// calls ends with its answer; one more model call is not made, and the
// ledger says so (steps_over_bound).
func TestStepsOverTheBoundEndTheTask(t *testing.T) {
	echo := [3]string{"c1", "echo", `{"path":"a"}`}
	f := boundedFixture(t, agent.Bounds{Steps: 2},
		toolsReply(true, echo), textReply("two steps"),
		toolsReply(true, echo), toolsReply(true, echo), textReply("never asked"))
	f.start(t, "two steps", allGrants)
	if end := f.waitEvent(t, agent.EvTurnEnd); end.Status != "succeeded" || end.Text != "two steps" {
		t.Fatalf("two steps at a bound of 2: %+v", end)
	}
	waitIdle(t, f.rt)
	task := f.start(t, "three steps", allGrants)
	overBound(t, f, task, f.waitEvent(t, agent.EvTurnEnd), "steps_over_bound", agent.FlagSteps)
	if n := len(f.srv.requests()); n != 4 {
		t.Fatalf("%d model requests; want 4 (the third step of the second task is never asked)", n)
	}
}

// TestAStreamedAnswerOverTheBoundIsNotReadFurther: the server has 64 MiB
// of answer to stream; the provider stops reading (and drops the
// connection) soon after the bound, so the server cannot write more than
// what the connection's buffers hold.
func TestAStreamedAnswerOverTheBoundIsNotReadFurther(t *testing.T) {
	const bound = 64 << 10
	delta := strings.Repeat("z", 4000)
	total := 64 << 20
	srv := modeltest.New(t, modeltest.Reply{Gen: func(i int) (string, bool) {
		return modeltest.Chunk(`{"content":`+modeltest.JS(delta)+`}`, ""), i*len(delta) < total
	}})
	p := agent.NewOpenAI(agent.ProviderConfig{BaseURL: srv.URL(), Key: "k", Retry: fastRetry, Bounds: agent.Bounds{AnswerBytes: bound}})
	got := 0
	_, err := p.Complete(context.Background(), agent.Request{Model: "m", Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}},
		func(s string) { got += len(s) })
	if !errors.Is(err, agent.ErrAnswerBound) {
		t.Fatalf("err %v; want the answer bound", err)
	}
	if got > bound {
		t.Fatalf("%d bytes of text handed on; the bound is %d", got, bound)
	}
	// Close waits for the server's handler: its writes fail once the
	// client dropped the connection. The kernel's socket buffers hold a
	// few MiB at most; a client that read on would take all 64.
	srv.Close()
	if sent := srv.Sent(); sent > 16<<20 {
		t.Fatalf("the server wrote %d bytes: the client read on past the bound", sent)
	}
}

// TestOneHugeStreamEventIsRefused: an event of the stream over six times
// the answer bound and 64 KiB (a field the decoder would hold whole) fails
// the read before the event is decoded.
func TestOneHugeStreamEventIsRefused(t *testing.T) {
	const bound = 16 << 10
	huge := `{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","pad":"` + strings.Repeat("p", 6*bound+64<<10) +
		`","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`
	srv := modeltest.New(t, modeltest.Reply{Chunks: []string{huge}})
	p := agent.NewOpenAI(agent.ProviderConfig{BaseURL: srv.URL(), Key: "k", Retry: fastRetry, Bounds: agent.Bounds{AnswerBytes: bound}})
	_, err := p.Complete(context.Background(), agent.Request{Model: "m", Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}}, nil)
	if !errors.Is(err, agent.ErrAnswerBound) {
		t.Fatalf("err %v; want the answer bound", err)
	}
	// the same event under the factor passes
	ok := strings.Replace(huge, strings.Repeat("p", 6*bound+64<<10), strings.Repeat("p", 6*bound+60<<10), 1)
	srv.Add(modeltest.Reply{Chunks: []string{ok}})
	if r, err := p.Complete(context.Background(), agent.Request{Model: "m", Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}}, nil); err != nil || r.Text != "hi" {
		t.Fatalf("an event under the factor: %q, %v", r.Text, err)
	}
}

// TestAnthropicAnswerAndToolCallBounds: the Messages stream is metered
// alike: text at the bound passes, one byte more fails; tool_use blocks at
// the bound pass, one more fails.
func TestAnthropicAnswerAndToolCallBounds(t *testing.T) {
	text := strings.Repeat("a", 500)
	c := func(id string) modeltest.Call { return modeltest.Call{ID: id, Name: "echo", Args: `{"path":"a"}`} }
	srv := modeltest.NewAnthropic(t, modeltest.AText(text, modeltest.AUsage{}), modeltest.AText(text+"b", modeltest.AUsage{}),
		modeltest.AToolUse("", modeltest.AUsage{}, c("t1"), c("t2")), modeltest.AToolUse("", modeltest.AUsage{}, c("t1"), c("t2"), c("t3")))
	p := agent.NewAnthropic(agent.ProviderConfig{BaseURL: srv.URL(), Key: "k", Retry: fastRetry, Bounds: agent.Bounds{AnswerBytes: 500, ToolCalls: 2}})
	req := agent.Request{Model: "m", Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}}
	if r, err := p.Complete(context.Background(), req, nil); err != nil || r.Text != text {
		t.Fatalf("text at the bound: %v", err)
	}
	if _, err := p.Complete(context.Background(), req, nil); !errors.Is(err, agent.ErrAnswerBound) {
		t.Fatalf("text one byte over: %v", err)
	}
	if r, err := p.Complete(context.Background(), req, nil); err != nil || len(r.Calls) != 2 {
		t.Fatalf("2 tool calls at a bound of 2: %v", err)
	}
	if _, err := p.Complete(context.Background(), req, nil); !errors.Is(err, agent.ErrCallsBound) {
		t.Fatalf("3 tool calls: %v", err)
	}
}

// TestBoundsOutOfRangeAreRefused: each bound names its flag and range.
func TestBoundsOutOfRangeAreRefused(t *testing.T) {
	for _, b := range []agent.Bounds{{AnswerBytes: agent.MaxAnswerBytes + 1}, {ToolCalls: -1}, {Steps: agent.MaxMaxSteps + 1},
		{ToolPreviewBytes: agent.MinToolPreviewBytes - 1}} {
		if err := b.Validate(); !errors.Is(err, agent.ErrBadConfig) || !strings.Contains(err.Error(), "--agent.") {
			t.Fatalf("%+v: %v", b, err)
		}
	}
	if err := agent.DefaultBounds().Validate(); err != nil {
		t.Fatal(err)
	}
}
