package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
)

const subagentMark = "CHILD-TRANSCRIPT-MARK"

// childReq tells a child's request from its parent's: a child's system
// prompt says it is a subagent.
func childReq(req map[string]any) bool {
	b, _ := json.Marshal(req["messages"])
	return bytes.Contains(b, []byte("You are a subagent"))
}

func withToolResult(req map[string]any) bool {
	for _, m := range modeltest.Messages(req) {
		if strings.HasPrefix(m, "tool:") {
			return true
		}
	}
	return false
}

func agentCalls(n int) modeltest.Reply {
	var calls []modeltest.Call
	for i := range n {
		calls = append(calls, modeltest.Call{ID: fmt.Sprintf("a%d", i), Name: "agent",
			Args: fmt.Sprintf(`{"profile":"explorer","brief":"look at part %d"}`, i)})
	}
	return modeltest.Calls(true, calls...)
}

// TestAskTwentyParallelSubagents: the model asks for 20 subagents in one
// step. The first 16 children's model calls are held until 16 are in
// flight at once; the server never sees more than 16 in flight; the other
// 4 run after; the parent's next request carries 20 validated handoffs
// and no child's transcript; the children are subagent sessions of the
// parent in the roster.
func TestAskTwentyParallelSubagents(t *testing.T) {
	e := askEnv(t)
	var (
		mu             sync.Mutex
		inflight, peak int
		childRuns      int
		gate           = make(chan struct{})
		once           sync.Once
	)
	srv := modeltest.New(t)
	srv.SetFallback(func(map[string]any) modeltest.Reply {
		return modeltest.Reply{Func: func(req map[string]any) modeltest.Reply {
			if !childReq(req) {
				if withToolResult(req) {
					return modeltest.Text("all twenty handed off")
				}
				return agentCalls(20)
			}
			if withToolResult(req) {
				return modeltest.Text(subagentMark + " finished")
			}
			mu.Lock()
			inflight++
			childRuns++
			peak = max(peak, inflight)
			if inflight == 16 {
				once.Do(func() { close(gate) })
			}
			mu.Unlock()
			select {
			case <-gate:
			case <-time.After(90 * time.Second): // bounded; the test fails on the peak
			}
			mu.Lock()
			inflight--
			mu.Unlock()
			return modeltest.Calls(true, modeltest.Call{ID: "h1", Name: "handoff",
				Args: `{"status":"done","changes":[],"verification":"read it: fine","unresolved":[]}`})
		}}
	})
	r := run(t, append(e.hookEnv(), "HARN_PROVIDER_KEY=k"), "", "ask", "--provider-url", srv.URL(), "--model", "test-model",
		"--grants", grantsFile(t, "execute agent\nexecute read\n"), "fan out")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "all twenty handed off" {
		t.Fatalf("%v", r)
	}
	mu.Lock()
	if peak != 16 || childRuns != 20 {
		mu.Unlock()
		t.Fatalf("peak %d children in flight (want 16), %d children ran (want 20)", peak, childRuns)
	}
	mu.Unlock()
	var last map[string]any
	for _, q := range srv.Requests() {
		if childReq(q) {
			continue
		}
		b, _ := json.Marshal(q)
		if bytes.Contains(b, []byte(subagentMark)) || bytes.Contains(b, []byte("You are an explorer")) {
			t.Fatalf("a child's transcript reached the parent: %s", b)
		}
		last = q
	}
	raw, _ := json.Marshal(last)
	if n := bytes.Count(raw, []byte(`\"outcome\":\"valid\"`)); n != 20 {
		t.Fatalf("%d validated handoffs reached the parent, want 20", n)
	}
	parent, kids := "", 0
	for _, s := range e.list(true) {
		if s.Agent == "harn" && s.ParentSessionID == "" {
			parent = s.SessionID
		}
	}
	for _, s := range e.list(true) {
		if s.ParentSessionID != "" && s.ParentSessionID == parent {
			kids++
		}
	}
	if parent == "" || kids != 20 {
		t.Fatalf("parent %q with %d subagent sessions in the roster, want 20", parent, kids)
	}
}

// TestSubagentsLostAtAKillAreNamedOnTheParentsTrace: three children are
// running (their model calls held) when the node is killed with SIGKILL;
// after a restart the parent's trace names exactly those three as lost,
// and none is resumed.
func TestSubagentsLostAtAKillAreNamedOnTheParentsTrace(t *testing.T) {
	e := newEnv(t)
	nodeArgs := []string{"node", "--data-dir", e.dataDir, "--socket", e.socket}
	n := e.spawn(append(append([]string(nil), e.base...), "HARN_TASK_GRACE=2s"), nodeArgs...)
	e.waitReady(n)
	hold := make(chan struct{})
	arrived := make(chan struct{}, 16)
	var mu sync.Mutex
	childCalls := 0
	srv := modeltest.New(t)
	srv.SetFallback(func(map[string]any) modeltest.Reply {
		return modeltest.Reply{Func: func(req map[string]any) modeltest.Reply {
			if !childReq(req) {
				return agentCalls(3)
			}
			mu.Lock()
			childCalls++
			mu.Unlock()
			arrived <- struct{}{}
			return modeltest.Reply{Hold: hold, Chunks: []string{modeltest.Chunk(`{"role":"assistant","content":"thinking"}`, ""),
				modeltest.Chunk(`{}`, "stop")}}
		}}
	})
	t.Cleanup(func() { close(hold) }) // before the server's Close, which waits for its handlers
	ask := exec.Command(harnBin, "ask", "--provider-url", srv.URL(), "--model", "test-model",
		"--grants", grantsFile(t, "execute agent\nexecute read\n"), "fan out to three")
	ask.Env = append(e.hookEnv(), "HARN_PROVIDER_KEY=k")
	if err := ask.Start(); err != nil {
		t.Fatal(err)
	}
	askDone := make(chan struct{})
	go func() { ask.Wait(); close(askDone) }()
	t.Cleanup(func() {
		ask.Process.Kill() // ours, by its handle
		<-askDone
	})
	for i := range 3 {
		select {
		case <-arrived:
		case <-time.After(60 * time.Second):
			t.Fatalf("only %d of 3 children reached the model", i)
		}
	}
	parent := ""
	kids := map[string]bool{}
	eventually(t, 20*time.Second, "three running subagent sessions in the roster", func() (bool, string) {
		parent, kids = "", map[string]bool{}
		ss := e.list(true)
		for _, s := range ss {
			if s.Agent == "harn" && s.ParentSessionID == "" {
				parent = s.SessionID
			}
		}
		for _, s := range ss {
			if parent != "" && s.ParentSessionID == parent && !s.Ended {
				kids[s.SessionID] = true
			}
		}
		return len(kids) == 3, fmt.Sprintf("parent %q, kids %v", parent, kids)
	})
	e.kill9(n)
	n2 := e.spawn(append(append([]string(nil), e.base...), "HARN_TASK_GRACE=2s"), nodeArgs...)
	e.waitReady(n2)
	lost := map[string]bool{}
	eventually(t, 20*time.Second, "the parent's trace names the three lost children", func() (bool, string) {
		lost = map[string]bool{}
		for _, ev := range e.trace(parent) {
			if ev.Type == "narration" && ev.Attrs["reason"] == "subagent_lost" {
				id, _ := ev.Attrs["subagent"].(string)
				lost[id] = true
			}
		}
		return len(lost) == 3, fmt.Sprintf("lost %v", lost)
	})
	for id := range kids {
		if !lost[id] {
			t.Fatalf("child %s is not named lost; lost %v, kids %v", id, lost, kids)
		}
	}
	for _, s := range e.list(true) {
		if kids[s.SessionID] && !s.Ended {
			t.Fatalf("lost child %s is not ended in the roster: %+v", s.SessionID, s)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if childCalls != 3 {
		t.Fatalf("%d child model calls; a lost child was resumed", childCalls)
	}
}
