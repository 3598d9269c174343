package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

// hostedRow is the part of a roster row these tests read.
type hostedRow struct {
	SessionID string `json:"session_id"`
	Node      string `json:"node"`
	Activity  string `json:"activity"`
	Ended     bool   `json:"ended"`
	EndReason string `json:"end_reason"`
	Cwd       string `json:"cwd"`
	Hosted    *struct {
		Worktree string   `json:"worktree"`
		Branch   string   `json:"branch"`
		Peek     []string `json:"peek"`
	} `json:"hosted"`
}

// hostedRowOf finds session id in m's roster (--all).
func hostedRowOf(m *meshNode, id string) (hostedRow, string) {
	var rows []hostedRow
	r := m.harn("", "agents", "list", "--all", "--json")
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &rows) != nil {
		return hostedRow{}, r.String()
	}
	for _, row := range rows {
		if row.SessionID == id {
			return row, ""
		}
	}
	return hostedRow{}, m.name + ": " + id + " not in " + r.stdout
}

// hostedMesh is a trusted mesh with s0 hosting: its launcher fakehost
// (the interactive fake agent, logging to log), --remote-control naming
// n1, fakehost in --remote-exec, and root as its --workspace; n1 serves
// its board.
func hostedMesh(t *testing.T, log, root string) (s0, n1 *meshNode) {
	t.Helper()
	cfg := strings.TrimPrefix(launcherConfig(t, map[string][]string{"fakehost": hostedLauncher(t, log, "300ms")}), "HARN_CONFIG=")
	s0Flags := []string{"--config", cfg, "--remote-control", "n1", "--remote-exec", "fakehost", "--workspace", root}
	n1Flags := []string{"--http-port", net.JoinHostPort("127.0.0.1", strconv.Itoa(freePorts(t, 1)[0]))}
	return trustedMeshOf(t, s0Flags, n1Flags)
}

// The tour: from n1, a person starts a fake agent on s0 in a new
// worktree, sees it on n1's roster, attaches to its terminal from n1,
// types into it, detaches, steers it and queues a follow-up from n1's
// CLI, sees its question on n1's roster while it waits, interrupts it,
// and stops it; the worktree is listed and then removed.
func TestAHostedAgentOnAnotherNodeIsRunSteeredAttachedAndStopped(t *testing.T) {
	root := t.TempDir()
	log := filepath.Join(t.TempDir(), "input.log")
	s0, n1 := hostedMesh(t, log, root)
	repo := gitRepoAt(t, filepath.Join(root, "app"))

	var run struct{ Session, Node, Worktree string }
	mustJSON(t, n1.ok("run", "fakehost", "--node", "s0", "--dir", repo, "--worktree", "feat/remote", "--json", "wait for it"), &run)
	wt := filepath.Join(repo, ".harn", "worktrees", "feat--remote")
	if run.Node != "s0" || run.Worktree != wt || !strings.HasPrefix(run.Session, "hs-") {
		t.Fatalf("run printed %+v, want node s0 and worktree %s", run, wt)
	}
	if b, err := exec.Command("git", "-C", wt, "rev-parse", "--abbrev-ref", "HEAD").Output(); err != nil || strings.TrimSpace(string(b)) != "feat/remote" {
		t.Fatalf("the worktree's branch: %q %v", b, err)
	}
	started := time.Now()
	for _, m := range []*meshNode{s0, n1} {
		eventually(t, stateTimeout, m.name+" lists the hosted session", func() (bool, string) {
			row, why := hostedRowOf(m, run.Session)
			return row.Node == "s0" && !row.Ended && row.Hosted != nil && row.Hosted.Worktree == wt && row.Cwd == wt, fmt.Sprintf("%+v %s", row, why)
		})
	}
	t.Logf("both rosters listed the hosted session %v after the run returned", time.Since(started))
	// The hook's events reach the same row: the agent's prompt opened a turn.
	eventually(t, stateTimeout, "the agent's hooks reach its hosted row", func() (bool, string) {
		row, why := hostedRowOf(s0, run.Session)
		return row.Activity == "working", fmt.Sprintf("%+v %s", row, why)
	})

	// Attach from n1: the screen at once, typing, a resize, a detach.
	p := startPTY(t, n1.hookEnv(), 30, 100, "attach", run.Session)
	p.waitFor("the attach paints the agent's screen", "working on: wait for it")
	p.write("typed via attach\r")
	eventually(t, stateTimeout, "what is typed reaches the agent", func() (bool, string) {
		return strings.Contains(string(inputLog(log)), "typed via attach\r"), string(inputLog(log))
	})
	pty.Setsize(p.f, &pty.Winsize{Rows: 40, Cols: 120})
	p.waitFor("the resize reaches the agent", "40x120")
	p.write("\x1d")
	if code := p.exit(); code != 0 {
		t.Fatalf("detach exited %d: %s", code, p.output())
	}
	hint := regexp.MustCompile(`harn attach (hs-[0-9a-z]+)`).FindStringSubmatch(p.output())
	if !strings.Contains(p.output(), "detached; the agent runs on: harn attach "+run.Session) || hint == nil {
		t.Fatalf("the detach does not say so: %q", p.output())
	}
	// The hint runs as printed (in a terminal), and the agent ran on.
	again := startPTY(t, n1.hookEnv(), 30, 100, strings.Fields(hint[0])[1:]...)
	again.waitFor("the printed hint attaches again", "typed via attach")
	again.write("\x1d")
	again.exit()

	// Steer from n1's CLI: the text and a carriage return, now.
	n1.ok("task", "steer", "--session", run.Session, "steered from n1")
	eventually(t, stateTimeout, "the steer reaches the agent", func() (bool, string) {
		return strings.Contains(string(inputLog(log)), "steered from n1\r"), string(inputLog(log))
	})
	// A follow-up is held while the turn is open (the first prompt waits
	// for "finish"), and typed at its stop.
	if out := n1.ok("task", "follow-up", "--session", run.Session, "after the turn"); !strings.Contains(out, "held") {
		t.Fatalf("follow-up: %s", out)
	}
	if strings.Contains(string(inputLog(log)), "after the turn") {
		t.Fatal("the follow-up was typed while the turn was open")
	}
	n1.ok("task", "steer", "--session", run.Session, "finish")
	eventually(t, stateTimeout, "the follow-up is typed at the turn's stop", func() (bool, string) {
		return strings.Contains(string(inputLog(log)), "finish\rafter the turn\r"), string(inputLog(log))
	})

	// A question: n1's roster shows the session waiting, with the last
	// lines of its screen.
	// The follow-up's own turn (its prompt, then its stop) ends before the
	// next prompt, which would otherwise steer into it.
	eventually(t, stateTimeout, "the follow-up's turn stops", func() (bool, string) {
		row, why := hostedRowOf(s0, run.Session)
		evs := s0.trace(run.Session)
		return row.Activity == "idle" && countType(evs, "turn.stop") >= 2, fmt.Sprintf("%+v %s %v", row, why, types(evs))
	})
	n1.ok("task", "steer", "--session", run.Session, "please ask me")
	eventually(t, stateTimeout, "n1 sees the question", func() (bool, string) {
		row, why := hostedRowOf(n1, run.Session)
		return row.Activity == "needs_input" && row.Hosted != nil && strings.Contains(strings.Join(row.Hosted.Peek, "\n"), "Allow Bash: rm -rf build? [y/n]"),
			fmt.Sprintf("%+v %s", row, why)
	})
	if out := n1.ok("agents", "list"); !strings.Contains(out, "Allow Bash") {
		t.Fatalf("n1's table does not show the question: %s", out)
	}
	// n1's board shows it too, and the session's terminal page; its steer
	// box types into the agent on s0.
	b := n1.board()
	cookie := b.login(t)
	getPage := func(path string) string {
		req, _ := http.NewRequest("GET", b.base+path, nil)
		req.AddCookie(cookie)
		res, body := do(t, req)
		if res.StatusCode != 200 {
			t.Fatalf("GET %s: %d %.300s", path, res.StatusCode, body)
		}
		return body
	}
	if body := getPage(""); !strings.Contains(body, "Allow Bash: rm -rf build? [y/n]") || !strings.Contains(body, "/h/"+run.Session) {
		t.Fatalf("n1's board does not show the question: %.2000s", body)
	}
	page := getPage("h/" + run.Session)
	csrf := csrfMeta.FindStringSubmatch(page)
	if csrf == nil || !strings.Contains(page, "working on: please ask me") {
		t.Fatalf("the terminal page: %.2000s", page)
	}
	req, _ := http.NewRequest("POST", b.base+"hosted", strings.NewReader(url.Values{"csrf": {csrf[1]}, "kind": {"steer"},
		"session": {run.Session}, "text": {"n"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Origin", b.origin())
	req.AddCookie(cookie)
	if res, body := do(t, req); res.StatusCode != 200 || !strings.Contains(body, `"ok":true`) {
		t.Fatalf("the board's steer: %d %s", res.StatusCode, body)
	}
	eventually(t, stateTimeout, "the board's steer answers the question", func() (bool, string) {
		row, why := hostedRowOf(s0, run.Session)
		return row.Activity == "idle" && strings.Contains(string(inputLog(log)), "please ask me\rn\r"), fmt.Sprintf("%+v %s %q", row, why, inputLog(log))
	})

	// Interrupt from n1: Esc reaches the agent.
	n1.ok("agents", "interrupt", run.Session)
	eventually(t, stateTimeout, "the interrupt reaches the agent", func() (bool, string) {
		return strings.Contains(string(inputLog(log)), "\x1b"), string(inputLog(log))
	})

	// Stop from n1: the live worktree's refusal names the command, which
	// runs as printed; the process and the session end.
	r := n1.harn("", "worktrees", "remove", "feat/remote", "--node", "s0")
	stop := regexp.MustCompile(`\(harn (agents stop hs-[0-9a-z]+)\)`).FindStringSubmatch(r.stderr)
	if r.code != 4 || stop == nil {
		t.Fatalf("removing a live session's worktree: %v", r)
	}
	n1.ok(strings.Fields(stop[1])...)
	for _, m := range []*meshNode{s0, n1} {
		eventually(t, stateTimeout, m.name+" shows the session ended", func() (bool, string) {
			row, why := hostedRowOf(m, run.Session)
			return row.Ended, fmt.Sprintf("%+v %s", row, why)
		})
	}
	if row, _ := hostedRowOf(s0, run.Session); !strings.Contains(row.EndReason, "stopped by") {
		t.Fatalf("end reason %q", row.EndReason)
	}

	// The worktree is listed (clean, its session named), then removed.
	var wts []struct {
		Path, Branch, Session string
		Live, Clean           bool
	}
	mustJSON(t, n1.ok("worktrees", "--node", "s0", "--json"), &wts)
	if len(wts) != 1 || wts[0].Path != wt || wts[0].Session != run.Session || wts[0].Live || !wts[0].Clean {
		t.Fatalf("worktrees %+v", wts)
	}
	n1.ok("worktrees", "remove", "feat/remote", "--node", "s0")
	mustJSON(t, n1.ok("worktrees", "--node", "s0", "--json"), &wts)
	if len(wts) != 0 {
		t.Fatalf("after remove: %+v", wts)
	}
}
