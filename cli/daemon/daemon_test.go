package daemon

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/harn-dev/harn/cli/hook"
)

func runMain(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	var out, errb bytes.Buffer
	code = Main(args, strings.NewReader(""), &out, &errb, &Daemon{})
	return code, out.String(), errb.String()
}

// TestHarndsNodeHelpShowsEveryNodeFlag: `harnd node --help` lists every
// flag of the node, the same set `harn node` is built with.
func TestHarndsNodeHelpShowsEveryNodeFlag(t *testing.T) {
	code, out, errs := runMain(t, "node", "--help")
	if code != hook.ExitOK {
		t.Fatalf("harnd node --help: exit %d, %s", code, errs)
	}
	n := 0
	NewNodeCmd().Flags().VisitAll(func(f *pflag.Flag) {
		n++
		if !strings.Contains(out, "--"+f.Name+" ") {
			t.Errorf("harnd node --help does not show --%s", f.Name)
		}
	})
	if n < 55 {
		t.Errorf("the node has %d flags; want its whole set (at least 55)", n)
	}
}

// TestHarndRunsItsOwnCommandsOnly: harnd's tree is node, mesh init, token
// create and version; harn's client commands are a usage error there.
func TestHarndRunsItsOwnCommandsOnly(t *testing.T) {
	for _, args := range [][]string{{"mesh", "init", "--help"}, {"token", "create", "--help"}, {"version"}} {
		if code, _, errs := runMain(t, args...); code != hook.ExitOK {
			t.Errorf("harnd %s: exit %d, %s", strings.Join(args, " "), code, errs)
		}
	}
	code, _, errs := runMain(t, "agents", "list")
	if code != hook.ExitUsage || !strings.Contains(errs, `unknown command "agents"`) {
		t.Errorf("harnd agents list: exit %d, %q; want %d naming the command", code, errs, hook.ExitUsage)
	}
}

// TestHarndsTokenCreateLeavesARunningNodeToHarn: with a node on the
// socket, harnd does not write the trust store under it: exit 7 naming
// `harn token create`.
func TestHarndsTokenCreateLeavesARunningNodeToHarn(t *testing.T) {
	dir, err := os.MkdirTemp("", "hd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	code, _, errs := runMain(t, "token", "create", "--data-dir", dir, "--socket", sock)
	if code != hook.ExitConflict || !strings.Contains(errs, "harn token create") {
		t.Errorf("harnd token create beside a running node: exit %d, %q; want %d naming harn token create", code, errs, hook.ExitConflict)
	}
}
