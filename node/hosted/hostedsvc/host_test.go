package hostedsvc

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/hosted"
	"github.com/harn-dev/harn/node/operator"
	"github.com/harn-dev/harn/node/remotepolicy"
)

type testHostT struct {
	*Host
	testData string
}

// testHost is a Host (its room unopened) of node testnode with data dir
// data and workspace roots; launchers fake (in --remote-exec) and other.
func testHost(t *testing.T, data string, roots ...string) testHostT {
	t.Helper()
	ws, err := remotepolicy.ResolveWorkspaces(roots)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	pol := remotepolicy.Config{Node: "testnode", Workspaces: ws, Private: []string{remotepolicy.Resolve(data)}}
	gate := &operator.Gate{Node: "testnode", Log: log, Policy: func() operator.Policy { return operator.Policy{Exec: []string{"fake"}} }}
	return testHostT{Host: &Host{Deps: Deps{Node: "testnode", Log: log, Gate: gate,
		Launchers: map[string][]string{"fake": {"/bin/sh", "-c", "sleep 30"}, "other": {"/bin/sh"}},
		Policy:    func() remotepolicy.Config { return pol }}}, testData: data}
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
	n := testHost(t, t.TempDir(), root)
	run := func(dir string, remote bool) error {
		_, err := n.Spec(&api.HostedRunRequest{Agent: "fake", Dir: dir}, remote)
		return err
	}
	if err := run(inside, true); err != nil {
		t.Fatalf("a directory inside the root: %v", err)
	}
	for name, dir := range map[string]string{"outside": outside, "a symlink out": link, "the data dir": n.testData, "relative": "app"} {
		if err := run(dir, true); err == nil {
			t.Errorf("%s (%s): a remote run was admitted", name, dir)
		}
	}
	if sp, err := n.Spec(&api.HostedRunRequest{Agent: "fake"}, true); err != nil || sp.Dir != root {
		t.Fatalf("a remote run without --dir runs in the first root: %+v %v", sp.Dir, err)
	}
	if err := run(outside, false); err != nil {
		t.Fatalf("a local run outside the roots: %v", err)
	}
	// A root that holds the data dir still keeps the data dir out.
	home := t.TempDir()
	data := filepath.Join(home, "harn-data")
	os.MkdirAll(data, 0o700)
	wide := testHost(t, data, home)
	if _, err := wide.Spec(&api.HostedRunRequest{Agent: "fake", Dir: data}, true); err == nil || !strings.Contains(err.Error(), "data dir") {
		t.Fatalf("the data dir under a root: %v", err)
	}
	bare := testHost(t, t.TempDir())
	if _, err := bare.Spec(&api.HostedRunRequest{Agent: "fake", Dir: inside}, true); err == nil || !strings.Contains(err.Error(), "--workspace") {
		t.Fatalf("a node without roots: %v", err)
	}
}

// TestARemoteRunNamesALauncherInRemoteExec: a launcher --remote-exec does
// not list is refused (PermissionDenied) for a remote run; an unknown
// name is never run as a command.
func TestARemoteRunNamesALauncherInRemoteExec(t *testing.T) {
	root := t.TempDir()
	n := testHost(t, t.TempDir(), root)
	if _, err := n.Spec(&api.HostedRunRequest{Agent: "other", Dir: root}, true); status.Code(Status(err)) != codes.PermissionDenied {
		t.Fatalf("a launcher not in --remote-exec: %v", err)
	}
	if _, err := n.Spec(&api.HostedRunRequest{Agent: "other", Dir: root}, false); err != nil {
		t.Fatalf("the same launcher locally: %v", err)
	}
	for _, name := range []string{"/bin/sh", "sh -c id", "../fake"} {
		if _, err := n.Spec(&api.HostedRunRequest{Agent: name, Dir: root}, false); !errors.Is(err, hosted.ErrBadStart) {
			t.Errorf("%q: want no such agent, got %v", name, err)
		}
	}
	sp, err := n.Spec(&api.HostedRunRequest{Agent: "fake", Dir: root, Prompt: "go"}, true)
	if err != nil || sp.Argv[len(sp.Argv)-1] != "go" || !sp.Busy {
		t.Fatalf("a launcher's prompt is its last argument: %+v %v", sp, err)
	}
}
