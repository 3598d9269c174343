package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harn-dev/harn/node/ledger"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/runtime"
)

// A node killed while it hosts a running task comes back hosting nothing:
// the runtime session it left is ended with reason node_restart, and its
// open task is terminal in the runtime ledger.
func TestHostedRuntimeSessionEndsWithNodeRestartAfterARestart(t *testing.T) {
	fake := buildFakeAgent(t)
	e := newEnv(t)
	mark := t.TempDir()
	environ := append(append([]string(nil), e.base...), "HARN_TASK_GRACE=1s", "FAKEAGENT_MARK="+mark,
		"FAKEAGENT_HOOK="+harnBin+" hook claude-code --data-dir "+e.dataDir+" --socket "+e.socket)
	args := []string{"node", "--data-dir", e.dataDir, "--socket", e.socket}
	n := e.spawn(environ, args...)
	e.waitReady(n)
	r := e.task("start", "--exec", fake+" -p --output-format stream-json", "hang")
	if r.Session == "" || r.Task.ID == "" {
		t.Fatalf("start: %+v", r)
	}
	eventually(t, stateTimeout, "the task runs", func() (bool, string) {
		s := e.task("show", r.Task.ID)
		return s.Task.State == "running", s.Task.State
	})
	var agentPID int
	eventually(t, stateTimeout, "the agent writes its pid", func() (bool, string) {
		b, err := os.ReadFile(filepath.Join(mark, "pid"))
		agentPID, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && agentPID > 0, string(b)
	})
	e.kill9(n) // a crash: nothing is closed on the way out
	if p, err := os.FindProcess(agentPID); err == nil {
		_ = p.Signal(syscall.SIGKILL) // the orphaned agent
	}

	n2 := e.spawn(environ, args...)
	e.waitReady(n2)
	eventually(t, stateTimeout, "the session is ended with node_restart", func() (bool, string) {
		s := e.show(r.Session)
		return s.Ended && s.EndReason == tasks.ReasonNodeRestart, s.EndReason
	})
	for _, s := range e.list(false) {
		if s.SessionID == r.Session {
			t.Errorf("the ended runtime session %s is still listed as live", r.Session)
		}
	}
	e.stopNode(n2)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lg, err := ledger.OpenContext(ctx, ledger.DefaultConfig(filepath.Join(e.dataDir, "ledger")))
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	recs, err := tasks.NewLedger(lg).Records(r.Task.ID)
	if err != nil || len(recs) == 0 {
		t.Fatalf("records of %s: %v (%d)", r.Task.ID, err, len(recs))
	}
	last := recs[len(recs)-1]
	if last.Kind != runtime.RecState || last.State != runtime.StateTerminal || last.Reason != tasks.ReasonNodeRestart {
		t.Errorf("the task's last record is %+v, want terminal with reason node_restart", last)
	}
}
