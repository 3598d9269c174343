package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// durableEnv is a node running fakeagent tasks, and how to start it again
// on the same data directory.
func durableEnv(t *testing.T) (e *env, cmd, mark string, restart func() *nodeProc) {
	t.Helper()
	fake := buildFakeAgent(t)
	e = newEnv(t)
	mark = t.TempDir()
	environ := append(append([]string(nil), e.base...), "HARN_TASK_GRACE=1s", "FAKEAGENT_MARK="+mark,
		"FAKEAGENT_HOOK="+harnBin+" hook claude-code --data-dir "+e.dataDir+" --socket "+e.socket)
	args := []string{"node", "--data-dir", e.dataDir, "--socket", e.socket}
	restart = func() *nodeProc {
		n := e.spawn(environ, args...)
		e.waitReady(n)
		return n
	}
	return e, fake + " -p --output-format stream-json", mark, restart
}

// A task that runs when its node is killed answers `harn task show` after
// the restart (exit 0), as interrupted (node restart), with its output so
// far.
func TestTaskShowAnswersAfterAKill9AndARunningTaskIsInterrupted(t *testing.T) {
	e, cmd, mark, restart := durableEnv(t)
	n := restart()
	r := e.task("start", "--exec", cmd, "hang")
	eventually(t, stateTimeout, "the task runs and has said something", func() (bool, string) {
		s := e.task("show", r.Task.ID)
		return s.Task.State == "running" && strings.Contains(strings.Join(s.Output, "\n"), "echo: hang"), s.Task.State
	})
	var agentPID int
	eventually(t, stateTimeout, "the agent writes its pid", func() (bool, string) {
		b, err := os.ReadFile(filepath.Join(mark, "pid"))
		agentPID, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && agentPID > 0, string(b)
	})
	e.kill9(n) // SIGKILL by the node's pid
	if p, err := os.FindProcess(agentPID); err == nil {
		_ = p.Signal(syscall.SIGKILL) // the orphaned agent
	}

	n2 := restart()
	defer e.stopNode(n2)
	res := e.harn("", "task", "show", r.Task.ID, "--json")
	if res.code != 0 {
		t.Fatalf("task show after the restart: %v", res)
	}
	var s struct {
		Task struct {
			State  string `json:"state"`
			Reason string `json:"reason"`
		} `json:"task"`
		Text   string   `json:"text"`
		Output []string `json:"output"`
	}
	mustJSON(t, res.stdout, &s)
	if s.Task.State != "interrupted" || s.Task.Reason != "node_restart" {
		t.Errorf("after the restart the task is %q (%q), want interrupted (node_restart)", s.Task.State, s.Task.Reason)
	}
	if !strings.Contains(strings.Join(s.Output, "\n"), "echo: hang") || s.Text != "hang" {
		t.Errorf("after the restart text %q, output %q; want the task's text and its output so far", s.Text, s.Output)
	}
	if out := e.ok("task", "show", r.Task.ID); !strings.Contains(out, "interrupted (node restart)") {
		t.Errorf("task show says %q, want interrupted (node restart)", out)
	}
}

// An unknown-outcome hold survives a kill -9: after the restart the
// successor's mutation on the same session is refused until `harn task
// ack`.
func TestAnUnknownOutcomeHoldSurvivesAKill9UntilTaskAck(t *testing.T) {
	e, _, _, restart := durableEnv(t)
	n := restart()
	sid := "cc-hold-1"
	e.hook("claude-code", `{"session_id":"`+sid+`","hook_event_name":"SessionStart","source":"startup","cwd":"`+e.root+`"}`)
	write := func(id string) string {
		return `{"session_id":"` + sid + `","hook_event_name":"PreToolUse","tool_name":"Write","tool_use_id":"` + id +
			`","tool_input":{"file_path":"` + e.root + `/x","content":"y"}}`
	}
	decision := func(r result) (string, string) {
		if strings.TrimSpace(r.stdout) == "" {
			return "", ""
		}
		var out struct {
			H struct {
				Decision string `json:"permissionDecision"`
				Reason   string `json:"permissionDecisionReason"`
			} `json:"hookSpecificOutput"`
		}
		mustJSON(t, r.stdout, &out)
		return out.H.Decision, out.H.Reason
	}
	first := e.task("start", "--session", sid, "--profile", "full", "write it")
	eventually(t, stateTimeout, "the task runs", func() (bool, string) {
		s := e.task("show", first.Task.ID)
		return s.Task.State == "running", s.Task.State
	})
	if d, why := decision(e.hook("claude-code", write("toolu_w1"))); d == "deny" {
		t.Fatalf("the first Write was denied: %s", why)
	}
	// The Write never reports back: cancelled past the grace, its outcome
	// is unknown.
	e.task("cancel", first.Task.ID)
	before := e.waitTask(first.Task.ID, "cancelled")
	if before.View == nil || len(before.View.AwaitingAck) != 1 {
		t.Fatalf("before the restart the session awaits ack of %+v, want [%s]", before.View, first.Task.ID)
	}
	e.kill9(n)

	n2 := restart()
	defer e.stopNode(n2)
	shown := e.task("show", first.Task.ID)
	if shown.View == nil || len(shown.View.AwaitingAck) != 1 || shown.View.AwaitingAck[0] != first.Task.ID {
		t.Fatalf("after the restart the session awaits ack of %+v, want [%s]", shown.View, first.Task.ID)
	}
	second := e.task("start", "--session", sid, "--profile", "full", "write again")
	eventually(t, stateTimeout, "the successor runs", func() (bool, string) {
		s := e.task("show", second.Task.ID)
		return s.Task.State == "running", s.Task.State
	})
	d, why := decision(e.hook("claude-code", write("toolu_w2")))
	if d != "deny" || !strings.Contains(why, "harn task ack "+first.Task.ID) {
		t.Fatalf("the successor's Write after the restart: %q %q, want a deny naming `harn task ack %s`", d, why, first.Task.ID)
	}
	e.task("ack", first.Task.ID)
	if d, why := decision(e.hook("claude-code", write("toolu_w3"))); d == "deny" {
		t.Fatalf("the Write after the ack was denied: %s", why)
	}
}

// A harn task's LAST follows its output: a task that prints for a few
// seconds without any tool call keeps advancing its evidence, so it never
// reads silent.
func TestAHarnTasksLastFollowsItsOutput(t *testing.T) {
	e, _, _, restart := durableEnv(t)
	n := restart()
	defer e.stopNode(n)
	script := filepath.Join(e.root, "ticker.sh")
	os.WriteFile(script, []byte("#!/bin/sh\ni=0\nwhile [ $i -lt 40 ]; do echo tick $i; i=$((i+1)); sleep 0.2; done\n"), 0o755)
	r := e.task("start", "--exec", script, "tick")
	evidence := func() (time.Time, string) {
		var list []struct {
			SessionID string `json:"session_id"`
			Activity  string `json:"activity"`
			Evidence  string `json:"last_evidence_at"`
		}
		mustJSON(t, e.ok("agents", "list", "--json"), &list)
		for _, s := range list {
			if s.SessionID == r.Session {
				ts, _ := time.Parse(time.RFC3339Nano, s.Evidence)
				return ts, s.Activity
			}
		}
		return time.Time{}, "not listed"
	}
	var first time.Time
	eventually(t, stateTimeout, "the task has printed", func() (bool, string) {
		s := e.task("show", r.Task.ID)
		first, _ = evidence()
		return len(s.Output) > 0 && !first.IsZero(), strings.Join(s.Output, ";")
	})
	eventually(t, stateTimeout, "LAST advances with the output while the task runs", func() (bool, string) {
		ts, act := evidence()
		running := e.task("show", r.Task.ID).Task.State == "running"
		if !running {
			t.Fatal("the task ended before its LAST advanced")
		}
		return ts.Sub(first) >= time.Second && act == "working", ts.String() + " " + act
	})
}

// `harn agents ping` of an idle harn-run session says alive: the node owns
// its process while the runtime holds the session.
func TestPingOfAnIdleHarnSessionSaysAlive(t *testing.T) {
	e, cmd, _, restart := durableEnv(t)
	n := restart()
	defer e.stopNode(n)
	r := e.task("start", "--exec", cmd, "hello")
	e.waitTask(r.Task.ID, "succeeded")
	res := e.harn("", "agents", "ping", r.Session, "--json")
	if res.code != 0 {
		t.Fatalf("ping of an idle harn session: %v", res)
	}
	var p struct {
		Alive  bool `json:"alive"`
		Hosted bool `json:"hosted"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &p); err != nil || !p.Alive || !p.Hosted {
		t.Fatalf("ping: %q (%v), want alive and hosted", res.stdout, err)
	}
	if out := e.ok("agents", "ping", r.Session); !strings.Contains(out, "alive") {
		t.Errorf("ping says %q, want alive", out)
	}
}
