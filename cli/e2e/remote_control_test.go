package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// refused checks that r is a remote-control refusal: exit 16, one line.
func refused(t *testing.T, what string, r result, says string) {
	t.Helper()
	if r.code != 16 || !strings.Contains(r.stderr, says) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
		t.Fatalf("%s must be refused with exit 16 saying %q: %v", what, says, r)
	}
}

// Under the default policy (--remote-control off), a client holding only
// a node-role certificate acts on none of a server's agents: a start (of
// a command or a launcher), a steer, a follow-up, a cancel, a confirm, an
// approval and an end are all refused with exit 16, and nothing runs.
func TestRemoteControlIsOffByDefault(t *testing.T) {
	s0, n1 := trustedMesh(t, launcherConfig(t, nil), "HARN_REMOTE_EXEC=fake")
	marker := filepath.Join(s0.root, "ran")

	refused(t, "a remote start of a command", n1.harn("", "task", "start", "--node", "s0", "--exec", "touch "+marker, "x"), "--remote-control off")
	refused(t, "a remote start of a launcher", n1.harn("", "task", "start", "--node", "s0", "--launcher", "fake", "x"), "--remote-control off")
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the refused remote start ran its command")
	}
	if out := s0.ok("agents", "list", "--json"); strings.Contains(out, `"h-`) {
		t.Fatalf("a refused start opened a runtime session on s0: %s", out)
	}

	// s0's own operator starts a task locally (local --exec keeps
	// working); n1 may not touch it.
	hung := s0.task("start", "--exec", buildFakeAgent(t)+" -p --output-format stream-json", "hang")
	if want := operatorAt(t, "s0"); hung.Task.By != want {
		t.Fatalf("a local start is recorded by %q, want %q", hung.Task.By, want)
	}
	eventually(t, stateTimeout, "s0's task runs", func() (bool, string) {
		r := s0.task("show", hung.Task.ID)
		return r.Task.State == "running", r.Task.State
	})
	refused(t, "a remote steer", n1.harn("", "task", "steer", "--node", "s0", "--session", hung.Session, "stop that"), "--remote-control off")
	refused(t, "a remote follow-up", n1.harn("", "task", "follow-up", "--node", "s0", "--session", hung.Session, "then this"), "--remote-control off")
	refused(t, "a remote start on the session", n1.harn("", "task", "start", "--node", "s0", "--session", hung.Session, "this"), "--remote-control off")
	refused(t, "a remote cancel", n1.harn("", "task", "cancel", hung.Task.ID), "--remote-control off")
	refused(t, "a remote confirm", n1.harn("", "task", "confirm", hung.Task.ID, "c-1"), "--remote-control off")
	refused(t, "a remote ack", n1.harn("", "task", "ack", hung.Task.ID), "--remote-control off")
	if r := s0.task("show", hung.Task.ID); r.Task.State != "running" || r.Task.QueueDepth != 0 {
		t.Fatalf("the refused actions changed s0's task: %+v", r.Task)
	}

	// A permission request on s0: n1 sees it, and may not answer it.
	perm := `{"session_id":"cc-off-ask","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"rm -rf /important"}}`
	ch := make(chan result, 1)
	go func() {
		ch <- run(t, s0.hookEnv(), perm, "hook", "claude-code", "--remote-approve", "--approve-wait", "30s")
	}()
	var reqs []struct{ ID, Session string }
	eventually(t, stateTimeout, "n1 lists s0's open request", func() (bool, string) {
		mustJSON(t, n1.ok("agents", "pending", "--json"), &reqs)
		return len(reqs) == 1 && reqs[0].Session == "cc-off-ask", n1.ok("agents", "pending")
	})
	refused(t, "a remote approval", n1.harn("", "agents", "approve", reqs[0].ID), "--remote-control off")
	s0.ok("agents", "deny", reqs[0].ID, "--reason", "not from here")
	select {
	case got := <-ch:
		if strings.Contains(got.stdout, `"allow"`) {
			t.Fatalf("the hook answered allow after a refused remote approval: %v", got)
		}
	case <-time.After(stateTimeout):
		t.Fatal("the hook did not answer after the local deny")
	}

	// Ending another node's session is refused the same way.
	startClaudeSession(s0, "sess-off-end", t.TempDir())
	eventually(t, meshTimeout, "n1's end of s0's session is refused by s0's policy", func() (bool, string) {
		r := n1.harn("", "agents", "end", "--session", "sess-off-end")
		return r.code == 16 && strings.Contains(r.stderr, "--remote-control off"), r.String()
	})
	if st := s0.show("sess-off-end"); st.Ended {
		t.Fatal("the refused remote end ended the session")
	}
	s0.ok("task", "cancel", hung.Task.ID)
}

// A start from another node never runs a command that node sends, even
// when the policy names the caller: --exec is refused with exit 16; only
// a launcher that --remote-exec lists runs, and the record names the
// operator on the calling node.
func TestRemoteStartOfAFreeCommandIsRefused(t *testing.T) {
	s0, n1 := remoteMesh(t, "n1", "fake")
	marker := filepath.Join(s0.root, "ran")
	refused(t, "a free command", n1.harn("", "task", "start", "--node", "s0", "--exec", "touch "+marker, "x"), "never runs a command it sends")
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the refused remote start ran its command")
	}
	refused(t, "a launcher --remote-exec does not list", n1.harn("", "task", "start", "--node", "s0", "--launcher", "fakestream", "x"), "--remote-exec (fake)")
	refused(t, "a launcher s0 does not define", n1.harn("", "task", "start", "--node", "s0", "--launcher", "sh", "x"), "--remote-exec (fake)")

	started := n1.task("start", "--node", "s0", "--launcher", "fake", "hello from n1")
	if started.Node != "s0" || started.Task.ID == "" {
		t.Fatalf("the listed launcher must start on s0: %+v", started)
	}
	done := s0.waitTask(started.Task.ID, "succeeded")
	if !strings.Contains(strings.Join(done.Output, "\n"), "echo: hello from n1") {
		t.Fatalf("the launcher's agent output: %q", done.Output)
	}
	if want := operatorAt(t, "n1"); done.Task.By != want {
		t.Fatalf("s0 records the start by %q, want %q", done.Task.By, want)
	}
}

// A policy that does not name the caller refuses its launcher start: the
// role servers does not admit a node-role certificate.
func TestRemoteLauncherStartIsRefusedWhenThePolicyDoesNotNameTheCaller(t *testing.T) {
	s0, n1 := remoteMesh(t, "servers,n9", "fake")
	refused(t, "a launcher start from a node the policy does not name", n1.harn("", "task", "start", "--node", "s0", "--launcher", "fake", "x"),
		"--remote-control servers,n9")
	// s0's own operator still starts the launcher locally.
	local := s0.task("start", "--launcher", "fake", "local hello")
	s0.waitTask(local.Task.ID, "succeeded")
}

// The old policy value mesh is gone: a node given it stops with exit 2
// and one line naming the replacement, from the flag or the environment.
func TestRemoteControlMeshIsRefusedNamingTheReplacement(t *testing.T) {
	e := newEnv(t)
	for _, r := range []result{
		e.harn("", "node", "--remote-control", "mesh"),
		run(t, append(e.hookEnv(), "HARN_REMOTE_CONTROL=mesh"), "", "node"),
	} {
		msg := strings.TrimSpace(r.stderr)
		if r.code != 2 || strings.Contains(msg, "\n") || !strings.Contains(msg, "NODE,...") || !strings.Contains(msg, "servers") {
			t.Fatalf("want exit 2 and one line naming NODE,... or servers: %v", r)
		}
	}
}
