package tasks

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/subagent"
	"github.com/harn-dev/harn/util/clock"
)

// TestAChildGetsTheRepositoryInstructionsOnce: seed 001, a subagent
// "starts with its profile, relevant skills, applicable repository
// instructions, and an explicit task brief". The instructions reach the
// child's first request once: from its lane (forked at the parent's
// system prefix, read again in the child's directory), not a second time
// in its system prompt.
func TestAChildGetsTheRepositoryInstructionsOnce(t *testing.T) {
	const instrMark = "INSTR-ONCE-MARK keep tests green"
	h, err := New(Config{Node: "n1", KV: &memKV{}, Key: bytes.Repeat([]byte{7}, 32), Clock: clock.Real{}, Sink: &eventSink{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	var (
		mu         sync.Mutex
		childFirst map[string]any
	)
	srv := modeltest.New(t)
	srv.SetFallback(func(map[string]any) modeltest.Reply {
		return modeltest.Reply{Func: func(req map[string]any) modeltest.Reply {
			switch {
			case isChild(req):
				mu.Lock()
				if childFirst == nil {
					childFirst = req
				}
				mu.Unlock()
				return modeltest.Calls(true, modeltest.Call{ID: "h1", Name: subagent.ToolHandoff,
					Args: `{"status":"done","changes":[],"verification":"looked","unresolved":[]}`})
			case hasToolResult(req):
				return modeltest.Text("handed off")
			default:
				return modeltest.Calls(true, modeltest.Call{ID: "a1", Name: subagent.ToolAgent,
					Args: `{"profile":"explorer","brief":"look at the parser"}`})
			}
		}}
	})
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte(instrMark+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	id, err := h.OpenHarn(HarnOptions{URL: srv.URL(), Model: "test-model", Key: "k"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	grants := []runtime.Grant{{Level: runtime.Execute, Capability: "*"}, {Level: runtime.Execute, Capability: subagent.ToolAgent}}
	v, err := h.rt.Start(id, runtime.Request{Text: "spawn one", Grants: grants})
	if err != nil {
		t.Fatal(err)
	}
	waitTaskDone(t, h, v.ID)
	mu.Lock()
	req := childFirst
	mu.Unlock()
	if req == nil {
		t.Fatal("the child made no request")
	}
	raw, _ := json.Marshal(req["messages"])
	if n := bytes.Count(raw, []byte("INSTR-ONCE-MARK")); n != 1 {
		t.Fatalf("the child's first request carries the repository instructions %d times, want once: %s", n, raw)
	}
}
