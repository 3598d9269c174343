package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAnExecSessionsAgentDeclaringLifecycleIsRefused: an agent that a
// harn task runtime started (--exec) runs `harn agents lifecycle blocked`
// for its own harn session; the node sees the caller below its own
// process and refuses it with exit 4 naming top_level_only, recording
// nothing. The operator's shell on the node declares for it.
func TestAnExecSessionsAgentDeclaringLifecycleIsRefused(t *testing.T) {
	e, _ := taskEnv(t)
	script := filepath.Join(e.root, "declare.sh")
	body := "#!/bin/sh\n" + harnBin + " --socket " + e.socket + " agents lifecycle blocked --reason 'waiting on review' 2>&1\necho \"rc=$?\"\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	r := e.task("start", "--exec", script, "declare")
	done := e.waitTask(r.Task.ID, "succeeded")
	out := strings.Join(done.Output, "\n")
	if !strings.Contains(out, "rc=4") || !strings.Contains(out, "top_level_only") {
		t.Fatalf("the exec'd agent's declaration: %q; want exit 4 naming top_level_only", out)
	}
	var st struct {
		TaskState string `json:"task_state"`
	}
	mustJSON(t, e.ok("agents", "status", r.Session, "--json"), &st)
	if st.TaskState == "blocked" {
		t.Fatal("a refused declaration changed the session's lifecycle")
	}
	// The operator on the owning node, in no agent's process tree.
	e.ok("agents", "lifecycle", "blocked", "--reason", "waiting on review", "--session", r.Session)
	mustJSON(t, e.ok("agents", "status", r.Session, "--json"), &st)
	if st.TaskState != "blocked" {
		t.Fatalf("the operator's declaration: task_state %q", st.TaskState)
	}
}
