package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The fake agent (runtime/exec/testdata/fakeagent), built once, and
// linked as `claude` so that the executor reads it as Claude Code.
var (
	fakeOnce   sync.Once
	fakeClaude string
	fakeErr    error
)

func buildFakeAgent(t *testing.T) string {
	t.Helper()
	fakeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "harn-e2e-fake-")
		if err != nil {
			fakeErr = err
			return
		}
		bin := filepath.Join(dir, "fakeagent")
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/harn-dev/harn/runtime/exec/testdata/fakeagent").CombinedOutput()
		if err != nil {
			fakeErr = err
			t.Logf("go build fakeagent: %s", out)
			return
		}
		fakeClaude = filepath.Join(dir, "claude")
		fakeErr = os.Symlink(bin, fakeClaude)
	})
	if fakeErr != nil {
		t.Fatalf("fake agent: %v", fakeErr)
	}
	return fakeClaude
}

// taskEnv starts a node whose agents call `harn hook claude-code` for
// their tool calls, with a short grace period.
func taskEnv(t *testing.T) (*env, string) {
	t.Helper()
	fake := buildFakeAgent(t)
	e := newEnv(t)
	environ := append(append([]string(nil), e.base...), "HARN_TASK_GRACE=1s",
		"FAKEAGENT_HOOK="+harnBin+" hook claude-code --data-dir "+e.dataDir+" --socket "+e.socket)
	n := e.spawn(environ, "node", "--data-dir", e.dataDir, "--socket", e.socket)
	e.waitReady(n)
	return e, fake + " -p --output-format stream-json"
}

type taskResultJSON struct {
	Node    string `json:"node"`
	Session string `json:"session"`
	Task    struct {
		ID         string `json:"id"`
		State      string `json:"state"`
		Status     string `json:"status"`
		QueueDepth int    `json:"queue_depth"`
		By         string `json:"by"`
	} `json:"task"`
	Output []string `json:"output"`
	Steer  *struct {
		Mode string `json:"mode"`
		Task string `json:"task"`
	} `json:"steer"`
	View *struct {
		AwaitingAck []string `json:"awaiting_ack"`
	} `json:"session_view"`
}

func (e *env) task(args ...string) taskResultJSON {
	e.t.Helper()
	var r taskResultJSON
	mustJSON(e.t, e.ok(append(append([]string{"task"}, args...), "--json")...), &r)
	return r
}

// waitTask waits until the task is terminal with status.
func (e *env) waitTask(id, status string) taskResultJSON {
	e.t.Helper()
	var last taskResultJSON
	eventually(e.t, stateTimeout, "task "+id+" "+status, func() (bool, string) {
		last = e.task("show", id)
		return last.Task.State == "terminal" && last.Task.Status == status, last.Task.State + " " + last.Task.Status
	})
	return last
}

type harnTaskJSON struct {
	SessionID string `json:"session_id"`
	Agent     string `json:"agent"`
	HarnTask  *struct {
		ID         string `json:"id"`
		State      string `json:"state"`
		Status     string `json:"status"`
		Text       string `json:"text"`
		QueueDepth int    `json:"queue_depth"`
	} `json:"harn_task"`
}

func TestTaskStartRunsTheCommandAndTheRosterShowsItSucceeded(t *testing.T) {
	e, cmd := taskEnv(t)
	r := e.task("start", "--exec", cmd, "hello there")
	if r.Session == "" || r.Task.ID == "" || r.Node == "" {
		t.Fatalf("start: %+v", r)
	}
	done := e.waitTask(r.Task.ID, "succeeded")
	if !strings.Contains(strings.Join(done.Output, "\n"), "echo: hello there") {
		t.Fatalf("output: %q", done.Output)
	}
	eventually(t, stateTimeout, "the roster shows the harn task", func() (bool, string) {
		var list []harnTaskJSON
		mustJSON(t, e.ok("agents", "list", "--json"), &list)
		for _, s := range list {
			if s.SessionID == r.Session {
				ok := s.Agent == "harn" && s.HarnTask != nil && s.HarnTask.ID == r.Task.ID &&
					s.HarnTask.Status == "succeeded" && s.HarnTask.Text == "hello there"
				b, _ := json.Marshal(s)
				return ok, string(b)
			}
		}
		return false, "session not listed"
	})
}

func TestTaskSteerFollowUpAndSupersedeWaitsForTheBarrier(t *testing.T) {
	e, cmd := taskEnv(t)
	flag := filepath.Join(e.root, "go")
	first := e.task("start", "--exec", cmd+" --input-format stream-json", "wait-file="+flag)
	sid := first.Session
	// Steer: the streaming driver delivers it to the running agent.
	st := e.task("steer", "--session", sid, "a steer")
	if st.Steer == nil || st.Steer.Mode != "delivered" {
		t.Fatalf("steer: %+v", st)
	}
	// Follow-up: queued behind the running task.
	fu := e.task("follow-up", "--session", sid, "after")
	if fu.Task.State != "queued" {
		t.Fatalf("follow-up: %+v", fu)
	}
	os.WriteFile(flag, nil, 0o644)
	e.waitTask(first.Task.ID, "succeeded")
	e.waitTask(fu.Task.ID, "succeeded")

	// Supersede a hung task: the replacement starts only after the
	// barrier, and the old one ends superseded.
	hung := e.task("start", "--session", sid, "hang")
	eventually(t, stateTimeout, "the hung task runs", func() (bool, string) {
		v := e.task("show", hung.Task.ID)
		return v.Task.State == "running", v.Task.State
	})
	rep := e.task("supersede", "--session", sid, "replacement")
	if rep.Task.State != "queued" {
		t.Fatalf("the replacement must wait for the barrier: %+v", rep)
	}
	e.waitTask(hung.Task.ID, "superseded")
	e.waitTask(rep.Task.ID, "succeeded")

	// Steer with no running task fails clearly (runtime rule, exit 15).
	r := e.harn("", "task", "steer", "--session", sid, "nobody listens")
	if r.code != 15 || !strings.Contains(r.stderr, "no active task") {
		t.Fatalf("steer on an idle session: %v", r)
	}
}

func TestTaskCancelOfAHungMutationIsUnknownAndMutationsWaitForAck(t *testing.T) {
	e, cmd := taskEnv(t)
	target := filepath.Join(e.root, "mutated")
	first := e.task("start", "--exec", cmd, "--profile", "full", "ignore-sigint mutate-hang="+target)
	eventually(t, stateTimeout, "the mutation started", func() (bool, string) {
		_, err := os.Stat(target)
		return err == nil, "no file yet"
	})
	e.task("cancel", first.Task.ID)
	e.waitTask(first.Task.ID, "cancelled")
	// A successor may read but its mutation waits for an ack.
	second := e.task("start", "--session", first.Session, "--profile", "full", "mutate="+target+"2")
	done := e.waitTask(second.Task.ID, "succeeded")
	if !strings.Contains(strings.Join(done.Output, "\n"), "denied Write") {
		t.Fatalf("the mutation after an unknown outcome must be refused: %q", done.Output)
	}
	if _, err := os.Stat(target + "2"); err == nil {
		t.Fatal("the refused mutation ran")
	}
	e.task("ack", first.Task.ID)
	third := e.task("start", "--session", first.Session, "--profile", "full", "mutate="+target+"3")
	e.waitTask(third.Task.ID, "succeeded")
	if _, err := os.Stat(target + "3"); err != nil {
		t.Fatalf("after ack the mutation must run: %v", err)
	}
}

func TestPreToolUseOutsideGrantsIsDeniedForAClaudeSession(t *testing.T) {
	e, _ := taskEnv(t)
	sid := "cc-enforced-1"
	e.hook("claude-code", `{"session_id":"`+sid+`","hook_event_name":"SessionStart","source":"startup","cwd":"`+e.root+`"}`)
	task := e.task("start", "--session", sid, "--profile", "read-only", "look around")
	write := `{"session_id":"` + sid + `","hook_event_name":"PreToolUse","tool_name":"Write","tool_use_id":"toolu_w1","tool_input":{"file_path":"` + e.root + `/x","content":"y"}}`
	r := e.hook("claude-code", write)
	var out struct {
		H struct {
			Decision string `json:"permissionDecision"`
			Reason   string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	mustJSON(t, r.stdout, &out)
	if out.H.Decision != "deny" || !strings.Contains(out.H.Reason, task.Task.ID) {
		t.Fatalf("Write outside read-only grants: %q", r.stdout)
	}
	read := `{"session_id":"` + sid + `","hook_event_name":"PreToolUse","tool_name":"Read","tool_use_id":"toolu_r1","tool_input":{"file_path":"` + e.root + `/x"}}`
	if r := e.hook("claude-code", read); strings.TrimSpace(r.stdout) != "" {
		t.Fatalf("Read inside the grants must pass without an answer: %q", r.stdout)
	}
	// A session without a harn task is not governed.
	other := `{"session_id":"cc-free","hook_event_name":"PreToolUse","tool_name":"Write","tool_use_id":"toolu_w2","tool_input":{"file_path":"/tmp/x"}}`
	if r := e.hook("claude-code", other); strings.TrimSpace(r.stdout) != "" {
		t.Fatalf("an ungoverned session got an answer: %q", r.stdout)
	}
}

func TestRemoteApprovalReturnsAllowWithinOneSecondAndFallsThroughAfterTheWait(t *testing.T) {
	e, _ := taskEnv(t)
	perm := `{"session_id":"cc-ask","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"git push --force"}}`
	type hookOut struct {
		res result
		at  time.Time
	}
	ch := make(chan hookOut, 1)
	go func() {
		r := run(t, e.hookEnv(), perm, "hook", "claude-code", "--remote-approve", "--approve-wait", "20s")
		ch <- hookOut{r, time.Now()}
	}()
	var reqs []struct {
		ID, Session, Tool, Summary string
	}
	eventually(t, stateTimeout, "the request is pending", func() (bool, string) {
		mustJSON(t, e.ok("agents", "pending", "--json"), &reqs)
		return len(reqs) == 1, e.ok("agents", "pending")
	})
	if reqs[0].Session != "cc-ask" || reqs[0].Tool != "Bash" || strings.Contains(reqs[0].Summary, "force") {
		t.Fatalf("pending: %+v (the summary must not carry the arguments)", reqs[0])
	}
	approved := time.Now()
	e.ok("agents", "approve", reqs[0].ID)
	got := <-ch
	if d := got.at.Sub(approved); d > time.Second {
		t.Fatalf("the hook answered %v after the approval", d)
	}
	if !strings.Contains(got.res.stdout, `"behavior":"allow"`) {
		t.Fatalf("hook output: %v", got.res)
	}
	second := e.harn("", "agents", "deny", reqs[0].ID)
	if second.code != 15 || !strings.Contains(second.stderr, "approved by") {
		t.Fatalf("a second answer must be refused naming the first: %v", second)
	}
	// No answer: the hook falls through after its wait, with no output.
	r := run(t, e.hookEnv(), perm, "hook", "claude-code", "--remote-approve", "--approve-wait", "300ms")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "" {
		t.Fatalf("unanswered request: %v", r)
	}
}

func TestPlaintextMeshRefusesRemoteTaskStart(t *testing.T) {
	nodes := startServers(t, 2)
	a, b := nodes[0], nodes[1]
	r := a.harn("", "task", "start", "--node", b.name, "--exec", "cat", "run something")
	if r.code != 16 || !strings.Contains(r.stderr, "not mutually authenticated") {
		t.Fatalf("a remote task start over a plaintext mesh must be refused with exit 16: %v", r)
	}
}
