package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/apigrpc"
	"github.com/harn-dev/harn/node/hosted"
	"github.com/harn-dev/harn/node/tasks"
)

func hostingNode(t *testing.T, mod func(*Config)) *Node {
	t.Helper()
	cfg := testConfig(t, t.TempDir())
	cfg.Launchers = tasks.Launchers{"fake": {"/bin/sh", "-c", "sleep 30"}, "other": {"/bin/sh"}}
	cfg.Cluster.RemoteExec = []string{"fake"}
	if mod != nil {
		mod(&cfg)
	}
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestARemoteRunStaysInsideTheWorkspaceRoots: a run from another node
// names a directory inside one of the node's --workspace roots (symlinks
// resolved), never its data dir; with no roots every remote run is
// refused; no --dir is the first root. A local run is the node's own
// operator's.
func TestARemoteRunStaysInsideTheWorkspaceRoots(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	inside := filepath.Join(root, "app")
	os.MkdirAll(inside, 0o755)
	link := filepath.Join(root, "escape")
	os.Symlink(outside, link)
	n := hostingNode(t, func(c *Config) { c.Remote.Workspaces = []string{root} })
	run := func(dir string, remote bool) error {
		_, err := n.hostedSpec(&api.HostedRunRequest{Agent: "fake", Dir: dir}, remote)
		return err
	}
	if err := run(inside, true); err != nil {
		t.Fatalf("a directory inside the root: %v", err)
	}
	for name, dir := range map[string]string{"outside": outside, "a symlink out": link, "the data dir": n.cfg.DataDir, "relative": "app"} {
		if err := run(dir, true); err == nil {
			t.Errorf("%s (%s): a remote run was admitted", name, dir)
		}
	}
	if sp, err := n.hostedSpec(&api.HostedRunRequest{Agent: "fake"}, true); err != nil || sp.Dir != root {
		t.Fatalf("a remote run without --dir runs in the first root: %+v %v", sp.Dir, err)
	}
	if err := run(outside, false); err != nil {
		t.Fatalf("a local run outside the roots: %v", err)
	}
	// A root that holds the data dir still keeps the data dir out.
	home := t.TempDir()
	data := filepath.Join(home, "harn-data")
	os.MkdirAll(data, 0o700)
	wide := hostingNode(t, func(c *Config) { c.DataDir, c.Remote.Workspaces = data, []string{home} })
	if _, err := wide.hostedSpec(&api.HostedRunRequest{Agent: "fake", Dir: data}, true); err == nil || !strings.Contains(err.Error(), "data dir") {
		t.Fatalf("the data dir under a root: %v", err)
	}
	bare := hostingNode(t, nil)
	if _, err := bare.hostedSpec(&api.HostedRunRequest{Agent: "fake", Dir: inside}, true); err == nil || !strings.Contains(err.Error(), "--workspace") {
		t.Fatalf("a node without roots: %v", err)
	}
}

// TestARemoteRunNamesALauncherInRemoteExec: a launcher --remote-exec does
// not list is refused (PermissionDenied) for a remote run; an unknown
// name is never run as a command.
func TestARemoteRunNamesALauncherInRemoteExec(t *testing.T) {
	root := t.TempDir()
	n := hostingNode(t, func(c *Config) { c.Remote.Workspaces = []string{root} })
	if _, err := n.hostedSpec(&api.HostedRunRequest{Agent: "other", Dir: root}, true); status.Code(hostedStatus(err)) != codes.PermissionDenied {
		t.Fatalf("a launcher not in --remote-exec: %v", err)
	}
	if _, err := n.hostedSpec(&api.HostedRunRequest{Agent: "other", Dir: root}, false); err != nil {
		t.Fatalf("the same launcher locally: %v", err)
	}
	for _, name := range []string{"/bin/sh", "sh -c id", "../fake"} {
		if _, err := n.hostedSpec(&api.HostedRunRequest{Agent: name, Dir: root}, false); !errors.Is(err, hosted.ErrBadStart) {
			t.Errorf("%q: want no such agent, got %v", name, err)
		}
	}
	sp, err := n.hostedSpec(&api.HostedRunRequest{Agent: "fake", Dir: root, Prompt: "go"}, true)
	if err != nil || sp.Argv[len(sp.Argv)-1] != "go" || !sp.Busy {
		t.Fatalf("a launcher's prompt is its last argument: %+v %v", sp, err)
	}
}

// TestMaxHostedRefusalHasItsOwnReason: a start over --max-hosted is
// ResourceExhausted with the hosted-full reason (the CLI's exit 23);
// --max-hosted 0 is no config.
func TestMaxHostedRefusalHasItsOwnReason(t *testing.T) {
	err := hostedStatus(fmt.Errorf("%w: node n hosts 8", hosted.ErrTooMany))
	if status.Code(err) != codes.ResourceExhausted || apigrpc.Reason(err) != api.ReasonHostedFull {
		t.Fatalf("%v (reason %q)", err, apigrpc.Reason(err))
	}
	cfg := testConfig(t, t.TempDir())
	cfg.Hosted.Max = 0
	if _, err := New(cfg); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "--max-hosted 0") {
		t.Fatalf("--max-hosted 0: %v", err)
	}
}
