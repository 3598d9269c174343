package e2e

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
)

var restartHintRe = regexp.MustCompile("then run `([^`]+)`")

// TestAnOlderNodesHintRunsAsPrinted: on a socket served by gRPC alone (a
// harnd from before the local wire), a command exits 5 naming it and the
// command that starts this harn's node; the installed hook (harn-hook)
// exits 0 and spools its event. Once that node is stopped, the hint, run as
// printed, starts a node that answers and that ingests the spooled event.
func TestAnOlderNodesHintRunsAsPrinted(t *testing.T) {
	e := newEnv(t)
	lis, err := net.Listen("unix", e.socket)
	if err != nil {
		t.Fatal(err)
	}
	old := grpc.NewServer() // a node's socket before the local wire: gRPC only
	go old.Serve(lis)
	defer old.Stop()

	const sid = "0ld-n0de-5e55-1on"
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	hook := exec.CommandContext(ctx, filepath.Join(filepath.Dir(harnBin), "harn-hook"), "hook", "claude-code")
	hook.Env = e.hookEnv()
	hook.Stdin = strings.NewReader(`{"session_id":"` + sid + `","hook_event_name":"SessionStart","source":"startup","cwd":"/tmp"}`)
	if out, err := hook.CombinedOutput(); err != nil {
		t.Fatalf("harn-hook against the older node: %v: %s", err, out)
	}

	r := run(t, e.base, "", "--data-dir", e.dataDir, "--socket", e.socket, "agents", "list")
	if r.code != 5 || !strings.Contains(r.stderr, "older than this harn") {
		t.Fatalf("agents list against the older node: %v; want exit 5 naming it", r)
	}
	oneLineErr(t, r)
	m := restartHintRe.FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("no restart hint in %q", r.stderr)
	}
	words := strings.Fields(m[1]) // the test's paths need no quoting
	if len(words) < 2 || words[0] != "harn" || words[1] != "node" {
		t.Fatalf("hint %q is not `harn node ...`", m[1])
	}

	old.Stop() // "stop that node"
	os.Remove(e.socket)
	n := e.spawn(e.base, words[1:]...)
	eventually(t, 20*time.Second, "the hinted node answers and has ingested the spooled event", func() (bool, string) {
		r := run(t, e.base, "", "--data-dir", e.dataDir, "--socket", e.socket, "agents", "list", "--json")
		return r.code == 0 && strings.Contains(r.stdout, sid), r.stderr + r.stdout
	})
	e.stopNode(n)
}
