package tasks

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/agent"
	"github.com/harn-dev/harn/runtime/subagent"
	"github.com/harn-dev/harn/util/clock"
)

// requestTokens is tiktoken's count (o200k, agent.Tokens) of the fixed
// part of a chat-completions request as sent: its system messages and its
// tools, with the framing agent.Estimate charges.
func requestTokens(t *testing.T, req map[string]any) (n, tools int) {
	t.Helper()
	n = 3
	msgs, _ := req["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		if mm["role"] == "system" {
			s, _ := mm["content"].(string)
			n += agent.Tokens(s) + 4
		}
	}
	ts, _ := req["tools"].([]any)
	for _, x := range ts {
		f, _ := x.(map[string]any)["function"].(map[string]any)
		name, _ := f["name"].(string)
		desc, _ := f["description"].(string)
		params, err := json.Marshal(f["parameters"]) // map keys sorted: the canonical schema as sent
		if err != nil {
			t.Fatal(err)
		}
		n += agent.Tokens(name) + agent.Tokens(desc) + agent.Tokens(string(params)) + 4
		tools++
	}
	return n, tools
}

// TestAdmissionCountsTheCoreToolSchemasOnce: the admission base of a harn
// session is its request's system prompt and core tools, and a task's
// active tokens do not charge the core tools again. Base + active, with
// nothing loaded, is tiktoken's count of the actual request's fixed part.
func TestAdmissionCountsTheCoreToolSchemasOnce(t *testing.T) {
	srv := modeltest.New(t)
	srv.SetFallback(func(map[string]any) modeltest.Reply { return modeltest.Text("ok") })
	h, err := New(Config{Node: "n1", KV: &memKV{}, Key: bytes.Repeat([]byte{7}, 32), Clock: clock.Real{},
		Provider: Provider{URL: srv.URL(), Key: "sk"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	id, err := h.OpenHarn(HarnOptions{Model: "test-model"}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// The agent tool is in the base (a task whose grants name it carries
	// it), so this task's grants name it.
	v, err := h.rt.Start(id, runtime.Request{Text: "hi", Grants: []runtime.Grant{{Level: runtime.Execute, Capability: "read"},
		{Level: runtime.Execute, Capability: subagent.ToolAgent}}})
	if err != nil {
		t.Fatal(err)
	}
	waitTaskDone(t, h, v.ID)
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("no request")
	}
	want, n := requestTokens(t, reqs[0])
	if n < 12 {
		t.Fatalf("the request carried %d tools %v, want the core, discovery and agent tools", n, modeltest.ToolNames(reqs[0]))
	}
	cv, err := h.rt.Context(v.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := cv.Base + cv.Active; got != want {
		t.Fatalf("admission counts base %d + active %d = %d tokens before anything is loaded; the request's system prompt and tools are %d (tiktoken)",
			cv.Base, cv.Active, got, want)
	}
}
