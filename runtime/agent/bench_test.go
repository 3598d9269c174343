package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/agent"
)

// BenchmarkLoopStep is one turn of one model call through the loop
// (runtime task, context, request, stream, ledger record, Finish).
func BenchmarkLoopStep(b *testing.B) {
	srv := newScripted(b)
	rt, _ := runtime.New(runtime.Config{Ledger: runtime.NewMemLedger(), Key: []byte("k")})
	box := newTestBox()
	rt.SetCatalog(agent.Catalog, agent.Capabilities(box.Specs("", "")))
	m, _ := agent.ModelFor("gpt-4o", 0, 0)
	rt.OpenSession(sess, runtime.SessionConfig{Catalog: agent.Catalog, Budget: m.Budget(0)})
	ex, _ := agent.New(agent.Config{Runtime: rt, Session: sess, Box: box, Model: m,
		Provider: agent.NewOpenAI(agent.ProviderConfig{BaseURL: srv.URL(), Key: "k"})})
	for i := 0; i < b.N; i++ {
		srv.add(textReply("ok"))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := rt.Start(sess, runtime.Request{Text: "hi", Grants: allGrants}); err != nil {
			b.Fatal(err)
		}
		run, err := rt.Next(context.Background(), sess)
		if err != nil {
			b.Fatal(err)
		}
		if r := ex.RunTask(context.Background(), run); r.Status != runtime.StatusSucceeded {
			b.Fatalf("%+v", r)
		}
	}
}

// BenchmarkDirectCall is the bare thing: one streamed openai-go call to
// the same scripted server.
func BenchmarkDirectCall(b *testing.B) {
	srv := newScripted(b)
	cl := openai.NewClient(option.WithBaseURL(srv.URL()+"/"), option.WithAPIKey("k"), option.WithMaxRetries(0))
	for i := 0; i < b.N; i++ {
		srv.add(textReply("ok"))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := cl.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "m",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
		for s.Next() {
			_ = s.Current()
		}
		if err := s.Err(); err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
	_ = time.Second
}
