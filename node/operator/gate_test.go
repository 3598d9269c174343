package operator

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/node/trust"
)

func testGate(exec ...string) *Gate {
	return &Gate{Node: "n", Log: slog.New(slog.DiscardHandler), Policy: func() Policy { return Policy{Control: "all", Exec: exec} }}
}

// TestARemoteStartRunsOnlyALauncherInRemoteExec: a start from another
// node never runs a command it sends (--exec, --mcp); a launcher runs
// only when --remote-exec lists it; other ops pass.
func TestARemoteStartRunsOnlyALauncherInRemoteExec(t *testing.T) {
	g := testGate("fake")
	id := trust.Identity{Name: "laptop"}
	for name, a := range map[string]tasks.Action{
		"a free command":      {Op: tasks.OpStart, Command: "rm -rf /"},
		"a launcher unlisted": {Op: tasks.OpStart, Launcher: "other"},
		"harn --mcp":          {Op: tasks.OpStart, Harn: &tasks.HarnOptions{MCP: []string{"x=/bin/sh"}}},
	} {
		if err := g.AuthorizeStart(id, a); !errors.Is(err, ErrRemoteExec) {
			t.Errorf("%s: %v, want ErrRemoteExec", name, err)
		}
	}
	for name, a := range map[string]tasks.Action{
		"a listed launcher": {Op: tasks.OpStart, Launcher: "fake"},
		"a steer":           {Op: tasks.OpSteer, Session: "s", Text: "go"},
	} {
		if err := g.AuthorizeStart(id, a); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestACallerWithoutACertificateIsRefused: without a verified mesh
// certificate no policy admits a caller, nor lets it watch.
func TestACallerWithoutACertificateIsRefused(t *testing.T) {
	g := testGate()
	if _, err := g.Authorize(context.Background(), "task"); !errors.Is(err, ErrRemoteRefused) {
		t.Fatalf("Authorize: %v", err)
	}
	if g.Allowed(context.Background()) {
		t.Fatal("Allowed a caller without a certificate")
	}
	if _, _, err := g.AuthorizeAttach(context.Background(), "attach"); !errors.Is(err, ErrRemoteRefused) {
		t.Fatalf("AuthorizeAttach: %v", err)
	}
	if _, err := g.AuthorizeControl(context.Background()); !errors.Is(err, trust.ErrRemoteControl) {
		t.Fatalf("AuthorizeControl without a CA: %v", err)
	}
}
