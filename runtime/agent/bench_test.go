package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/agent"
	"github.com/harn-dev/harn/runtime/agent/tools"
)

// loopBench is one session's loop against a scripted server that
// answers every request with a short text.
type loopBench struct {
	srv  *modeltest.Server
	rt   *runtime.Runtime
	box  *testBox
	m    agent.Model
	prov agent.Provider
}

func newLoopBench(b *testing.B) *loopBench {
	srv := modeltest.New(b)
	srv.SetFallback(func(map[string]any) modeltest.Reply { return modeltest.Text("ok") })
	rt, _ := runtime.New(runtime.Config{Ledger: runtime.NewMemLedger(), Key: []byte("k")})
	box := newTestBox()
	rt.SetCatalog(agent.Catalog, agent.Capabilities(box.Specs("", "")))
	m, _ := agent.ModelFor("gpt-4o", 0, 0)
	return &loopBench{srv: srv, rt: rt, box: box, m: m,
		prov: agent.NewOpenAI(agent.ProviderConfig{BaseURL: srv.URL(), Key: "k"})}
}

// step runs one turn of one model call through ex: task start, the
// context's working set, the request, the stream, the ledger's record
// and Finish.
func (lb *loopBench) step(b *testing.B, ex *agent.Executor, sess string) {
	if _, err := lb.rt.Start(sess, runtime.Request{Text: "hi", Grants: allGrants}); err != nil {
		b.Fatal(err)
	}
	run, err := lb.rt.Next(context.Background(), sess)
	if err != nil {
		b.Fatal(err)
	}
	if r := ex.RunTask(context.Background(), run); r.Status != runtime.StatusSucceeded {
		b.Fatalf("%+v", r)
	}
}

// executor opens session sess and builds its executor.
func (lb *loopBench) executor(b *testing.B, sess string) *agent.Executor {
	if err := lb.rt.OpenSession(sess, runtime.SessionConfig{Catalog: agent.Catalog, Budget: lb.m.Budget(0)}); err != nil {
		b.Fatal(err)
	}
	ex, err := agent.New(agent.Config{Runtime: lb.rt, Session: sess, Box: lb.box, Model: lb.m, Provider: lb.prov})
	if err != nil {
		b.Fatal(err)
	}
	return ex
}

// directParams is the request the loop sends for a fresh turn (system
// prompt, one user message, the box's tools), built by hand.
func directParams(specs []tools.Spec) openai.ChatCompletionNewParams {
	p := openai.ChatCompletionNewParams{Model: "gpt-4o", MaxCompletionTokens: openai.Int(16384),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(agent.SystemPrompt), openai.UserMessage("hi")}}
	for _, t := range specs {
		var m map[string]any
		_ = json.Unmarshal(t.Schema, &m)
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: t.Name, Description: openai.String(t.Description), Parameters: m}))
	}
	return p
}

func directCall(b *testing.B, cl openai.Client, p openai.ChatCompletionNewParams) {
	s := cl.Chat.Completions.NewStreaming(context.Background(), p)
	var sb strings.Builder
	for s.Next() {
		for _, c := range s.Current().Choices {
			sb.WriteString(c.Delta.Content)
		}
	}
	if err := s.Err(); err != nil {
		b.Fatal(err)
	}
	s.Close()
	if sb.String() != "ok" {
		b.Fatalf("answer %q", sb.String())
	}
}

func pct(d []time.Duration, p int) time.Duration { return d[(len(d)-1)*p/100] }

func mean(d []time.Duration) time.Duration {
	var s time.Duration
	for _, x := range d {
		s += x
	}
	return s / time.Duration(max(len(d), 1))
}

// BenchmarkLoopOverhead times, interleaved in one run against the same
// scripted server, one loop step (a fresh turn: the session's context is
// new each step, so both sides send the same request: the system prompt,
// one user message and the tools) and the bare thing, a direct openai-go
// streaming call with that request. It reports the p50 of each, the
// overhead and the ratio. Target: loop ≤ 1.2 × direct + 2 ms.
func BenchmarkLoopOverhead(b *testing.B) {
	lb := newLoopBench(b)
	cl := openai.NewClient(option.WithBaseURL(lb.srv.URL()+"/"), option.WithAPIKey("k"), option.WithMaxRetries(0))
	p := directParams(lb.box.Specs("", ""))
	// Warm both (connections, the token vocabulary).
	lb.step(b, lb.executor(b, "warm"), "warm")
	directCall(b, cl, p)
	var loop, direct []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// A new session: its first turn sends the same request as the
		// direct call.
		sess := "b" + strconv.Itoa(i)
		ex := lb.executor(b, sess)
		t0 := time.Now()
		lb.step(b, ex, sess)
		loop = append(loop, time.Since(t0))
		t0 = time.Now()
		directCall(b, cl, p)
		direct = append(direct, time.Since(t0))
	}
	b.StopTimer()
	b.ReportMetric(float64(mean(loop).Microseconds()), "loop-mean-µs")
	b.ReportMetric(float64(mean(direct).Microseconds()), "direct-mean-µs")
	slices.Sort(loop)
	slices.Sort(direct)
	b.ReportMetric(float64(pct(loop, 90).Microseconds()), "loop-p90-µs")
	b.ReportMetric(float64(pct(direct, 90).Microseconds()), "direct-p90-µs")
	l, d := pct(loop, 50), pct(direct, 50)
	b.ReportMetric(float64(l.Microseconds()), "loop-p50-µs")
	b.ReportMetric(float64(d.Microseconds()), "direct-p50-µs")
	b.ReportMetric(float64((l - d).Microseconds()), "overhead-µs")
	b.ReportMetric(float64(l)/float64(d), "loop/direct")
	if raw := lb.srv.Raw(); len(raw) > 2 {
		// The two sides sent requests of the same size.
		b.ReportMetric(float64(len(raw[len(raw)-2]))/float64(len(raw[len(raw)-1])), "req-size-ratio")
		if os.Getenv("DUMP") != "" {
			b.Logf("loop: %s\ndirect: %s", raw[len(raw)-2], raw[len(raw)-1])
		}
	}
}

// BenchmarkLoopStepLongSession is a step of a session whose context
// keeps every turn (the request grows by two messages a step).
func BenchmarkLoopStepLongSession(b *testing.B) {
	lb := newLoopBench(b)
	ex := lb.executor(b, sess)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		lb.step(b, ex, sess)
	}
}

// BenchmarkDirectCall is the bare thing alone: one streamed openai-go
// call with the loop's fresh-turn request.
func BenchmarkDirectCall(b *testing.B) {
	lb := newLoopBench(b)
	cl := openai.NewClient(option.WithBaseURL(lb.srv.URL()+"/"), option.WithAPIKey("k"), option.WithMaxRetries(0))
	p := directParams(lb.box.Specs("", ""))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		directCall(b, cl, p)
	}
}
