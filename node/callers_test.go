package node

import (
	"context"
	"errors"
	"os/exec"
	"testing"

	"github.com/harn-dev/harn/presence"
)

// TestLifecycleFromAProcessTheNodeStartedIsRefused: a real child process
// of the node's own process (as an --exec agent is) asking for a
// declaration is refused as top_level_only and writes nothing; the same
// declaration with no caller the node can see is accepted.
func TestLifecycleFromAProcessTheNodeStartedIsRefused(t *testing.T) {
	n := openNode(t, testConfig(t, t.TempDir()))
	mustIngest(t, n, ev("s", "1", presence.TypeSessionStart, 1, nil))
	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		t.Skipf("no sleep(1) to stand for a child agent: %v", err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	ctx := context.Background()
	before, _ := n.ledger.Session("s")
	_, err := n.decl.LifecycleFrom(ctx, Caller{PID: child.Process.Pid}, "s", presence.TaskBlocked, "waiting")
	var re *RefusedError
	if !errors.As(err, &re) || re.Check != "top_level_only" || !errors.Is(err, ErrHarnRun) {
		t.Fatalf("declaration from the node's child: %v; want top_level_only (ErrHarnRun)", err)
	}
	if after, _ := n.ledger.Session("s"); len(after) != len(before) {
		t.Fatalf("a refused declaration wrote %d events", len(after)-len(before))
	}
	if _, err := n.decl.LifecycleFrom(ctx, Caller{}, "s", presence.TaskBlocked, "waiting"); err != nil {
		t.Fatalf("an operator's declaration: %v", err)
	}
}
