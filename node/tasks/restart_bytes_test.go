package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/agent"
	"github.com/harn-dev/harn/util/clock"
)

// rawMessages is the "messages" member of a request body, its bytes as
// sent (decoded into a json.RawMessage: never re-marshalled).
func rawMessages(t *testing.T, body string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	return string(m["messages"])
}

// TestARestartRebuildsTheRequestByteForByte: after a node restart, the
// request rebuilt from a harn session's stored context carries the very
// message bytes the model server received before it (the provider's
// prompt cache holds), tool-call arguments included as the model sent
// them: spaces, characters an encoder escapes, key order.
func TestARestartRebuildsTheRequestByteForByte(t *testing.T) {
	kv := &memKV{}
	cfg := Config{Node: "n1", KV: kv, Key: bytes.Repeat([]byte{7}, 32), Clock: clock.Real{}}
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	parked := modeltest.Text("never")
	parked.Hold = hold
	srv := modeltest.New(t, modeltest.Calls(true,
		modeltest.Call{ID: "c1", Name: "shell", Args: `{ "timeout_ms": 5000,  "command" : "echo '<a>' && echo b" }`},
		modeltest.Call{ID: "c2", Name: "read", Args: "{\n  \"path\": \"caf\u00e9.txt\"\n}"}), parked)
	id, err := h.OpenHarn(HarnOptions{URL: srv.URL(), Model: "test-model", Key: "k"}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.rt.Start(id, runtime.Request{Text: "run it", Grants: []runtime.Grant{{Level: runtime.Execute, Capability: "*"}}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		select {
		case <-srv.Arrived():
		case <-time.After(30 * time.Second):
			t.Fatal("the loop did not reach its second model call")
		}
	}
	before := rawMessages(t, srv.Raw()[1])
	h.Close() // the node stops while the second call streams

	h2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h2.Close)
	l, err := h2.contexts.Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	srv2 := modeltest.New(t, modeltest.Text("ok"))
	req := agent.Request{Model: "test-model", System: []string{agent.SystemPrompt}, Messages: l.ProviderView()}
	if _, err := agent.NewOpenAI(agent.ProviderConfig{BaseURL: srv2.URL(), Key: "k"}).Complete(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	if after := rawMessages(t, srv2.Raw()[0]); after != before {
		t.Fatalf("the rebuilt request's messages differ from those sent before the restart:\nbefore %s\nafter  %s", before, after)
	}
}
