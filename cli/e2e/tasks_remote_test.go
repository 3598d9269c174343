package e2e

import (
	"strings"
	"testing"
	"time"
)

// Over the mutually authenticated mesh, a task on another node's runtime
// is started, followed, superseded and cancelled from this node: the actions route to
// the owner, which runs the agent, and its answers come back with the same
// shape as a local call's.
func TestRemoteTaskStartSupersedeAndCancelOverMutualTLS(t *testing.T) {
	s0, n1 := trustedMesh(t)
	cmd := buildFakeAgent(t) + " -p --output-format stream-json"

	remote := func(args ...string) taskResultJSON {
		t.Helper()
		var r taskResultJSON
		mustJSON(t, n1.ok(append(append([]string{"task"}, args...), "--json")...), &r)
		return r
	}
	started := remote("start", "--node", "s0", "--exec", cmd, "hello from n1")
	if started.Session == "" || started.Task.ID == "" || started.Node != "s0" {
		t.Fatalf("remote start: %+v", started)
	}
	eventually(t, stateTimeout, "the remote task succeeded on s0", func() (bool, string) {
		r := remote("show", started.Task.ID)
		return r.Task.State == "terminal" && r.Task.Status == "succeeded" &&
			strings.Contains(strings.Join(r.Output, "\n"), "echo: hello from n1"), r.Task.State + " " + r.Task.Status
	})

	// Supersede a hung agent from n1: the replacement runs after the
	// barrier, and the old task ends superseded.
	first := remote("start", "--session", started.Session, "hang")
	eventually(t, stateTimeout, "the first hung task runs", func() (bool, string) {
		r := remote("show", first.Task.ID)
		return r.Task.State == "running", r.Task.State
	})
	next := remote("supersede", "--session", started.Session, "after the barrier")
	eventually(t, stateTimeout, "the replacement succeeded after the superseded task", func() (bool, string) {
		old, rep := remote("show", first.Task.ID), remote("show", next.Task.ID)
		return old.Task.Status == "superseded" && rep.Task.Status == "succeeded", old.Task.Status + " / " + rep.Task.Status
	})

	// A hung agent on s0, cancelled from n1.
	hung := remote("start", "--session", started.Session, "hang")
	if hung.Task.ID == "" {
		t.Fatalf("remote start on the session: %+v", hung)
	}
	eventually(t, stateTimeout, "the hung task runs", func() (bool, string) {
		r := remote("show", hung.Task.ID)
		return r.Task.State == "running", r.Task.State
	})
	remote("cancel", hung.Task.ID)
	eventually(t, stateTimeout, "the hung task is cancelled", func() (bool, string) {
		r := remote("show", hung.Task.ID)
		return r.Task.State == "terminal" && r.Task.Status == "cancelled", r.Task.State + " " + r.Task.Status
	})
	// The owner sees the same task.
	var own taskResultJSON
	mustJSON(t, s0.ok("task", "show", hung.Task.ID, "--json"), &own)
	if own.Task.Status != "cancelled" {
		t.Fatalf("s0's own view: %+v", own)
	}
}

// A Claude Code session on s0 asks for permission; the operator approves
// from n1, over the authenticated mesh, and s0's hook returns allow within
// a second of the approval.
func TestRemoteApprovalFromAnotherNode(t *testing.T) {
	s0, n1 := trustedMesh(t)
	perm := `{"session_id":"cc-remote-ask","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"make deploy"}}`
	type hookOut struct {
		res result
		at  time.Time
	}
	ch := make(chan hookOut, 1)
	go func() {
		r := run(t, s0.hookEnv(), perm, "hook", "claude-code", "--remote-approve", "--approve-wait", "20s")
		ch <- hookOut{r, time.Now()}
	}()
	var reqs []struct {
		ID, Session, Node, Tool string
	}
	eventually(t, stateTimeout, "n1 lists s0's open request", func() (bool, string) {
		mustJSON(t, n1.ok("agents", "pending", "--json"), &reqs)
		return len(reqs) == 1 && reqs[0].Session == "cc-remote-ask", n1.ok("agents", "pending")
	})
	approved := time.Now()
	n1.ok("agents", "approve", reqs[0].ID)
	got := <-ch
	if d := got.at.Sub(approved); d > time.Second {
		t.Fatalf("s0's hook answered %v after n1's approval", d)
	}
	if !strings.Contains(got.res.stdout, `"behavior":"allow"`) {
		t.Fatalf("hook output: %v", got.res)
	}
}
