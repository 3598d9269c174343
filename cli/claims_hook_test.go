package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/presence"
)

func gitInit(t *testing.T, dir, origin string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q", dir}, {"-C", dir, "remote", "add", "origin", origin}} {
		if origin == "" && args[0] == "-C" {
			continue
		}
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// TestTwoClonesShareClaimIdentity: an ssh clone and an https clone of one
// repository name the same (repo, path) for the same file.
func TestTwoClonesShareClaimIdentity(t *testing.T) {
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	gitInit(t, a, "git@github.com:harn-dev/demo.git")
	gitInit(t, b, "https://GitHub.com/harn-dev/demo")
	ev := func(path string) []presence.Event {
		e := presence.Event{SessionID: "s1", Type: presence.TypeClaimWrite, TS: time.Now()}
		e.SetAttr(presence.AttrPaths, []string{path})
		return []presence.Event{e}
	}
	ra := hook.ClaimRequests("claude-code", nil, ev(filepath.Join(a, "pkg", "x.go")))
	rb := hook.ClaimRequests("claude-code", nil, ev(filepath.Join(b, "pkg", "x.go")))
	if len(ra) != 1 || len(rb) != 1 || ra[0].Repo != rb[0].Repo || ra[0].Paths[0] != "pkg/x.go" || rb[0].Paths[0] != "pkg/x.go" {
		t.Fatalf("a %+v, b %+v", ra, rb)
	}
	if ra[0].Repo != "github.com/harn-dev/demo" {
		t.Fatalf("identity %q", ra[0].Repo)
	}
}

func TestClaimRequestsWithoutRemoteUseTheTopLevel(t *testing.T) {
	d := filepath.Join(t.TempDir(), "solo")
	gitInit(t, d, "")
	in := []byte(`{"hook_event_name":"BeforeTool","session_id":"g1","cwd":"` + d + `","tool_name":"write_file","tool_input":{"file_path":"docs/a.md"}}`)
	r := hook.ClaimRequests("gemini", in, nil)
	if len(r) != 1 || r[0].Repo != d || r[0].Paths[0] != "docs/a.md" || r[0].Session != "g1" {
		t.Fatalf("%+v", r)
	}
	// Outside any repository nothing is claimed.
	out := t.TempDir()
	os.MkdirAll(out, 0o755)
	in = []byte(`{"hook_event_name":"BeforeTool","session_id":"g1","cwd":"` + out + `","tool_name":"write_file","tool_input":{"file_path":"a.md"}}`)
	if r := hook.ClaimRequests("gemini", in, nil); len(r) != 0 {
		t.Fatalf("claimed outside a repository: %+v", r)
	}
}
