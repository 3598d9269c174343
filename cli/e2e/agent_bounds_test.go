package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
)

// vmRSS reads a process's resident set from /proc, in bytes (0 when it
// cannot).
func vmRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// hugeAnswer streams size bytes of answer text in deltas of 4000 bytes,
// generated as the client reads (the test never holds it).
func hugeAnswer(size int) modeltest.Reply {
	delta := modeltest.Chunk(`{"content":`+modeltest.JS(strings.Repeat("w", 4000))+`}`, "")
	return modeltest.Reply{Chunks: []string{modeltest.Chunk(`{"role":"assistant","content":""}`, "")},
		Gen: func(i int) (string, bool) { return delta, i*4000 < size }}
}

// stepsOf is a task's steps from `harn task show --json`.
func (e *env) stepsOf(task string) []map[string]any {
	e.t.Helper()
	var r struct {
		Steps []map[string]any `json:"steps"`
	}
	mustJSON(e.t, e.ok("task", "show", task, "--json"), &r)
	return r.Steps
}

// lastModelStep is the task's last model step.
func (e *env) lastModelStep(task string) map[string]any {
	e.t.Helper()
	var last map[string]any
	for _, s := range e.stepsOf(task) {
		if s["kind"] == "model" {
			last = s
		}
	}
	if last == nil {
		e.t.Fatalf("task %s has no model step", task)
	}
	return last
}

// TestAHugeStreamedAnswerEndsTheStepAndTheNodeStaysSmall: a model server
// streams a 200 MiB answer. The node stops reading at the answer bound,
// the step ends with an error in the ledger (answer_over_bound, naming
// the flag), harn ask exits 1 saying why, and the node's resident memory,
// sampled from /proc all along, stays under 1 GiB during the stream and
// after it. A second node, with the bound at its maximum (64 MiB), reads
// 16 times more and stays under it too.
func TestAHugeStreamedAnswerEndsTheStepAndTheNodeStaysSmall(t *testing.T) {
	for _, bound := range []string{"", "67108864"} {
		t.Run("bound="+bound, func(t *testing.T) {
			e := newEnv(t)
			args := []string{"node", "--data-dir", e.dataDir, "--socket", e.socket}
			if bound != "" {
				args = append(args, "--agent.max-answer-bytes", bound)
			}
			n := e.spawn(e.base, args...)
			e.waitReady(n)
			m := modeltest.New(t, hugeAnswer(200<<20))
			var peak int64
			sample := func() {
				if r := vmRSS(n.pid()); r > peak {
					peak = r
				}
			}
			ch, cmd := askJSON(t, e, modelArgs(m, "write a novel"))
			var end map[string]any
			deadline := time.After(2 * time.Minute)
			for end == nil {
				select {
				case ev, ok := <-ch:
					if !ok {
						t.Fatal("ask ended before its turn.end")
					}
					if ev["type"] == "turn.end" {
						end = ev
					}
				case <-time.After(pollEvery):
				case <-deadline:
					t.Fatalf("no turn.end within 2 minutes (the model server sent %d bytes)", m.Sent())
				}
				sample()
			}
			_ = cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != 1 || end["status"] != "failed" ||
				!strings.Contains(fmt.Sprint(end["text"]), "--agent.max-answer-bytes") {
				t.Fatalf("ask exit %d, end %v; want exit 1, failed, naming --agent.max-answer-bytes", code, end)
			}
			task := end["task"].(string)
			if s := e.lastModelStep(task); s["outcome"] != "answer_over_bound" || !strings.Contains(fmt.Sprint(s["reason"]), "agent.max-answer-bytes") {
				t.Fatalf("the ledger's model step %v; want answer_over_bound with its reason", s)
			}
			for range 20 { // and after the turn: nothing held on
				sample()
				time.Sleep(pollEvery)
			}
			if n.exited() {
				t.Fatal("the node exited")
			}
			t.Logf("bound %q: the server sent %d MiB; the node's peak RSS %d MiB, after the turn %d MiB",
				bound, m.Sent()>>20, peak>>20, vmRSS(n.pid())>>20)
			if peak == 0 || peak >= 1<<30 {
				t.Fatalf("the node's peak RSS was %d bytes; want under 1 GiB", peak)
			}
			if m.Sent() >= 200<<20 {
				t.Fatalf("the node read the whole 200 MiB answer")
			}
		})
	}
}

// manyCalls is one answer of n shell tool calls.
func manyCalls(n int, command string) modeltest.Reply {
	calls := make([]modeltest.Call, n)
	args, _ := json.Marshal(map[string]string{"command": command})
	for i := range calls {
		calls[i] = modeltest.Call{ID: fmt.Sprintf("c%d", i), Name: "shell", Args: string(args)}
	}
	return modeltest.Calls(true, calls...)
}

// TestTwentyThousandToolCallsInOneStepAreRefusedAtTheBound: one answer
// asks for 20,000 tool calls. The node stops reading at the 65th (the
// default bound is 64), runs none of them, and the ask ends at once with
// the reason; the ledger's model step says tool_calls_over_bound.
func TestTwentyThousandToolCallsInOneStepAreRefusedAtTheBound(t *testing.T) {
	e := askEnv(t)
	m := modeltest.New(t, manyCalls(20_000, "true"))
	ch, cmd := askJSON(t, e, modelArgs(m, "--profile", "full", "fan out"))
	end := waitFor(t, ch, "turn.end")
	_ = cmd.Wait()
	if end["status"] != "failed" || !strings.Contains(fmt.Sprint(end["text"]), "--agent.max-tool-calls") {
		t.Fatalf("end %v; want failed naming --agent.max-tool-calls", end)
	}
	task := end["task"].(string)
	for _, s := range e.stepsOf(task) {
		if s["kind"] == "tool" {
			t.Fatalf("a tool call of the refused step ran: %v", s)
		}
	}
	if s := e.lastModelStep(task); s["outcome"] != "tool_calls_over_bound" {
		t.Fatalf("model step %v", s)
	}
}

// TestACancelEndsAStepOfManyQueuedToolCallsWithinTheGrace: with the bound
// raised to 2,000, one step's 2,000 shell calls (sleep 60) run four at a
// time; `harn task cancel` ends the turn within the grace period (2 s
// here) and a bounded margin: the queued calls are not run, the running
// ones are stopped, and their 2,000 results enter the context at once.
func TestACancelEndsAStepOfManyQueuedToolCallsWithinTheGrace(t *testing.T) {
	e := newEnv(t)
	n := e.spawn(append(append([]string(nil), e.base...), "HARN_TASK_GRACE=2s"), "node", "--data-dir", e.dataDir,
		"--socket", e.socket, "--agent.max-tool-calls", "2000")
	e.waitReady(n)
	m := modeltest.New(t, manyCalls(2000, "sleep 60"))
	ch, _ := askJSON(t, e, modelArgs(m, "--profile", "full", "fan out"))
	task := waitFor(t, ch, "tool.pre")["task"].(string)
	start := time.Now()
	e.ok("task", "cancel", task)
	end := waitFor(t, ch, "turn.end")
	took := time.Since(start)
	if end["status"] != "cancelled" {
		t.Fatalf("end %v", end)
	}
	// the grace (2 s) plus the cancel's own round trip and the events'
	// poll: 15 s is a bound, not a measure
	if took > 15*time.Second {
		t.Fatalf("the turn ended %s after the cancel; the grace is 2 s", took)
	}
	t.Logf("the turn of 2000 queued calls ended %s after the cancel", took.Round(time.Millisecond))
}

// TestTheToolPreviewBoundReachesTheModelsContext: harn node
// --agent.tool-preview-bytes 300: a shell output of 300 bytes reaches the
// model whole, one of 301 as a preview with a recall reference.
func TestTheToolPreviewBoundReachesTheModelsContext(t *testing.T) {
	e := newEnv(t)
	n := e.spawn(e.base, "node", "--data-dir", e.dataDir, "--socket", e.socket, "--agent.tool-preview-bytes", "300")
	e.waitReady(n)
	for _, size := range []int{300, 301} {
		args, _ := json.Marshal(map[string]string{"command": fmt.Sprintf("yes q | tr -d '\\n' | head -c %d", size)})
		m := modeltest.New(t, modeltest.Calls(true, modeltest.Call{ID: "c1", Name: "shell", Args: string(args)}), modeltest.Text("done"))
		r := runIn(t, append(e.hookEnv(), "HARN_PROVIDER_KEY=k"), t.TempDir(), modelArgs(m, "--profile", "full", "print")...)
		if r.code != 0 {
			t.Fatalf("%v", r)
		}
		reqs := m.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d requests", len(reqs))
		}
		var tool string
		for _, msg := range modeltest.Messages(reqs[1]) {
			if strings.HasPrefix(msg, "tool:") {
				tool = strings.TrimPrefix(msg, "tool:")
			}
		}
		whole := strings.Repeat("q", size)
		if size == 300 && tool != whole {
			t.Fatalf("a 300-byte output at a 300-byte bound reached the model as %q", tool)
		}
		if size == 301 && (tool == whole || !strings.Contains(tool, "recall")) {
			t.Fatalf("a 301-byte output at a 300-byte bound reached the model as %q", tool)
		}
	}
}
