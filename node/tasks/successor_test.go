package tasks

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/util/clock"
)

// TestWhatASuccessorReceives (seed 000): a follow-up's first model
// request, as the model server received it, carries the conversation up
// to its submission point, its predecessor's final message and the
// redacted digest, and nothing of the predecessor's tool calls or tool
// results; the predecessor's output stays in the session's history,
// recallable byte for byte.
func TestWhatASuccessorReceives(t *testing.T) {
	h, err := New(Config{Node: "n1", KV: &memKV{}, Key: bytes.Repeat([]byte{7}, 32), Clock: clock.Real{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	hold := make(chan struct{})
	first := modeltest.Calls(true, modeltest.Call{ID: "call-a1", Name: "shell", Args: `{"command":"printf 'SECRET_%s' OUTPUT"}`})
	first.Hold = hold
	srv := modeltest.New(t, first, modeltest.Text("FINAL-ANSWER-A"), modeltest.Text("done with b"))
	id, err := h.OpenHarn(HarnOptions{URL: srv.URL(), Model: "test-model", Key: "k"}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	grants := []runtime.Grant{{Level: runtime.Execute, Capability: "*"}}
	a, err := h.rt.Start(id, runtime.Request{Text: "PROMPT-A inspect it", Grants: grants})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-srv.Arrived(): // A's first model call streams, held
	case <-time.After(30 * time.Second):
		t.Fatal("no model call")
	}
	b, err := h.rt.FollowUp(id, runtime.Request{Text: "PROMPT-B go on", Grants: grants})
	if err != nil {
		t.Fatal(err)
	}
	close(hold)
	waitTaskDone(t, h, a.ID)
	waitTaskDone(t, h, b.ID)
	raw := srv.Raw()
	if len(raw) != 3 {
		t.Fatalf("%d model requests, want 3", len(raw))
	}
	if !strings.Contains(raw[1], "SECRET_OUTPUT") {
		t.Fatal("the predecessor's own second request lacks its tool result: the test proves nothing")
	}
	req := raw[2] // B's first request, as the server received it
	for _, want := range []string{"PROMPT-A inspect it", "FINAL-ANSWER-A", "PROMPT-B go on", "Previous task " + a.ID + " ended succeeded"} {
		if !strings.Contains(req, want) {
			t.Errorf("the successor's first request lacks %q:\n%s", want, req)
		}
	}
	for _, leak := range []string{"SECRET_OUTPUT", "printf", "call-a1", `"tool_calls"`, `"role":"tool"`} {
		if strings.Contains(req, leak) {
			t.Errorf("the successor's first request carries the predecessor's tool traffic %q:\n%s", leak, req)
		}
	}
	// the history keeps the predecessor's output, recallable
	l, err := h.contexts.Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, it := range l.Report().Items {
		if it.Ref != "" && it.Task == a.ID {
			out, _, err := l.Recall(it.Ref, 0, -1)
			found = err == nil && string(out) == "SECRET_OUTPUT"
		}
	}
	if !found {
		t.Fatal("the predecessor's output is not recallable from the successor's lane")
	}
}
