package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// walkSteps are README's walk blocks, in order: the test fails when one
// is missing, renamed or moved, so that README and this test stay one.
var walkSteps = []string{"install", "nodeA", "nodeB", "nodeC", "mesh", "approve", "crash"}

var (
	readmePort = regexp.MustCompile(`\b(77[123][0-3]|8080)\b`)
	requestID  = regexp.MustCompile(`\br-[0-9A-Za-z]{4,}\b`)
)

// TestReadmeWalk types README's "first hour" into three bash shells on a
// fresh HOME, in order, as a person would: `make install` for real, a
// three-node mesh whose start and join commands are the ones harn printed
// (each checked against README's line, then run as printed), Claude Code
// wired by `harn hook install` and driven through the installed hook
// command with its real payloads, a webhook, an approval from node B of a
// request that waits on node A, and a kill -9 of node A and its restart.
// The only changes to README's lines are free ports for 7710-7733 and
// 8080, and the printed token and request id for `harn1.…` and `r-…`.
func TestReadmeWalk(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	steps := readmeWalk(t, filepath.Join(repo, "README.md"))
	var names []string
	for _, s := range steps {
		names = append(names, s.name)
	}
	if strings.Join(names, ",") != strings.Join(walkSteps, ",") {
		t.Fatalf("README's walk has steps %v, want %v", names, walkSteps)
	}

	home := t.TempDir()
	work := t.TempDir() // the shells' outputs
	srv := newHookServer(t, 0)
	_, srvPort, _ := strings.Cut(strings.TrimPrefix(srv.URL, "http://"), ":")
	taken := map[int]bool{}
	ports := map[string]string{"8080": srvPort}
	for _, n := range []string{"1", "2", "3"} {
		p := freeBlock(t, 4, taken)
		for i := 0; i < 4; i++ {
			ports["77"+n+strconv.Itoa(i)] = strconv.Itoa(p + i)
		}
	}
	subst := func(l string) string {
		return readmePort.ReplaceAllStringFunc(l, func(p string) string { return ports[p] })
	}
	environ := walkEnv(t, home)

	shells := map[string]*walkShell{}
	shell := func(name string) *walkShell {
		if s, ok := shells[name]; ok {
			return s
		}
		s := startShell(t, name, work, repo, environ)
		shells[name] = s
		return s
	}
	// Nodes the shells started: stopped at the end (SIGTERM, waited for),
	// by the pid their own `$!` gave.
	var started []int
	t.Cleanup(func() {
		for _, pid := range started {
			if pidAlive(pid) {
				stopPID(t, pid, "")
			}
		}
		logs, _ := filepath.Glob(filepath.Join(home, "harn", "*.log"))
		for _, f := range logs {
			if b, err := os.ReadFile(f); err == nil && (bytes.Contains(b, []byte("panic:")) || bytes.Contains(b, []byte("fatal error:"))) {
				t.Errorf("%s shows a crash:\n%s", f, b)
			}
		}
	})

	var startHint, joinHint []string
	reqID := ""
	sid, cwd := "cc-readme-walk", t.TempDir()
	var permDone chan result
	var eventsBefore int
	var nodeApid int

	// before and after are the person's part between README's lines:
	// reading the output, waiting, running Claude Code.
	before := map[string]func(){
		"approve": func() {
			a := shells["A"]
			envA := a.environ()
			hookCmd := installedHook(t, home, "PermissionRequest")
			for _, p := range []string{claudeStart(sid, cwd), claudePrompt(sid, cwd), claudePreBash(sid, cwd, "walk")} {
				if r := runHookCmd(envA, cwd, installedHook(t, home, eventOf(t, p)), p); r.code != 0 {
					t.Fatalf("the installed hook: %v", r)
				}
			}
			var before []sessionJSON
			mustJSON(t, run(t, envA, "", "agents", "list", "--json").stdout, &before)
			if !inList(before, sid) {
				t.Fatalf("the session is not in node A's roster after its hooks: %+v", before)
			}
			permDone = make(chan result, 1)
			go func() { permDone <- runHookCmd(envA, cwd, hookCmd, claudePermBash(sid, cwd, "walk")) }()
			// The notification comes first; the person answers it.
			srv.waitKinds(t, sid, "needs_input")
		},
		"crash": func() {
			envA := shells["A"].environ()
			var tr []eventJSON
			mustJSON(t, run(t, envA, "", "agents", "trace", sid, "--json").stdout, &tr)
			eventsBefore = len(tr)
			st, ok := walkStatus(t, envA)
			if !ok {
				t.Fatal("node A does not answer before the crash")
			}
			nodeApid = st.PID
		},
	}
	after := map[string]func(){
		"nodeC": func() { waitWalkMesh(t, shells["A"].environ()) },
		"approve": func() {
			select {
			case r := <-permDone:
				if r.code != 0 || !strings.Contains(r.stdout, `"allow"`) {
					t.Fatalf("the PermissionRequest hook on node A after B's approval: %v", r)
				}
			case <-time.After(stateTimeout):
				t.Fatal("the PermissionRequest hook did not return after the approval")
			}
			var m hookMsg
			for _, x := range srv.messages() {
				if x.Session.ID == sid && x.Kind == "needs_input" {
					m = x
				}
			}
			if m.Session.Request == nil || m.Session.Request.ID != reqID || m.Session.Node != "nodeA" {
				t.Fatalf("the webhook's needs_input message: %+v, want request %s on nodeA", m.Session, reqID)
			}
		},
		"crash": func() {
			if pidAlive(nodeApid) {
				t.Fatalf("node A (pid %d) outlived kill -9", nodeApid)
			}
			envA, envB := shells["A"].environ(), shells["B"].environ()
			var tr []eventJSON
			mustJSON(t, run(t, envA, "", "agents", "trace", sid, "--json").stdout, &tr)
			if len(tr) < eventsBefore {
				t.Fatalf("node A lost events in the crash: %d before, %d after", eventsBefore, len(tr))
			}
			waitWalkMesh(t, envB)
			eventually(t, meshTimeout, "node B's roster has node A's session, reachable", func() (bool, string) {
				var ss []rosterJSON
				r := run(t, envB, "", "agents", "list", "--json")
				if r.code != 0 {
					return false, r.String()
				}
				mustJSON(t, r.stdout, &ss)
				for _, s := range ss {
					if s.SessionID == sid {
						return s.Node == "nodeA" && s.Reachable && !s.Ended, s.String()
					}
				}
				return false, r.stdout
			})
		},
	}

	for _, st := range steps {
		if f := before[st.name]; f != nil {
			f()
		}
		sh := shell(st.shell)
		for _, line := range st.lines {
			line = subst(line)
			cmd := command(line)
			words, rest := splitRedirect(cmd)
			for i, w := range words { // as bash expands them
				if strings.HasPrefix(w, "~/") {
					words[i] = filepath.Join(home, w[2:])
				}
			}
			bgNode := len(words) >= 2 && words[0] == "harn" && words[1] == "node" && strings.HasSuffix(cmd, "&")
			switch {
			case bgNode && strings.Contains(cmd, "…"):
				// README's join line: the command token create printed.
				if !sameHint(words, joinHint) {
					t.Fatalf("step %s: README's %q is not the printed %q", st.name, cmd, strings.Join(joinHint, " "))
				}
				cmd = strings.Join(joinHint, " ") + " " + rest
			case bgNode && startHint != nil:
				if !sameHint(words, startHint) {
					t.Fatalf("step %s: README's %q is not the printed %q", st.name, cmd, strings.Join(startHint, " "))
				}
				cmd, startHint = strings.Join(startHint, " ")+" "+rest, nil
			case strings.Contains(cmd, "r-…"):
				if reqID == "" {
					t.Fatalf("step %s: %q, and no request id was printed before", st.name, cmd)
				}
				cmd = strings.ReplaceAll(cmd, "r-…", reqID)
			case strings.Contains(cmd, "…"):
				t.Fatalf("step %s: %q has a … the walk cannot fill", st.name, cmd)
			}
			d := cmdTimeout
			if strings.HasPrefix(cmd, "make ") {
				d = 5 * time.Minute
			}
			code, out := sh.run(cmd, d)
			if code != 0 && !strings.HasPrefix(cmd, "kill -9") {
				t.Fatalf("step %s, shell %s: %q exited %d:\n%s", st.name, st.shell, cmd, code, out)
			}
			t.Logf("%s$ %s\n%s", st.shell, cmd, out)
			if h := hintIn(out, "start this server with `"); h != nil {
				startHint = h
			}
			if h := hintIn(out, "on the other node: "); h != nil {
				joinHint = h
			}
			if strings.HasPrefix(cmd, "harn agents pending") {
				reqID = requestID.FindString(out)
			}
			if bgNode {
				pid := sh.lastJob()
				started = append(started, pid)
				waitWalkNode(t, sh, pid)
			}
		}
		if f := after[st.name]; f != nil {
			f()
		}
	}
	// The installed binaries are the ones the walk ran.
	for _, b := range []string{"harn", "harnd"} {
		if _, err := os.Stat(filepath.Join(home, ".local", "bin", b)); err != nil {
			t.Errorf("make install: %v", err)
		}
	}
}

// walkEnv is a person's environment on a fresh HOME: nothing of harn's,
// the XDG dirs under HOME, PATH without ~/.local/bin (README adds it).
// The Go caches are the test's own, so that `make install` builds from
// a warm cache; the mesh and raft profiles are the tests' fast timers.
func walkEnv(t *testing.T, home string) []string {
	t.Helper()
	var out []string
	for _, kv := range cleanEnv(home) {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "HOME", strings.HasPrefix(k, "XDG_"), strings.HasPrefix(k, "HARN_"), k == "GOCACHE", k == "GOMODCACHE", k == "GOPATH":
			continue
		}
		out = append(out, kv)
	}
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		b, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", k, err)
		}
		out = append(out, k+"="+strings.TrimSpace(string(b)))
	}
	return append(out, "HOME="+home,
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_STATE_HOME="+filepath.Join(home, ".local", "state"),
		"XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"HARN_MESH_PROFILE=local", "HARN_RAFT_PROFILE=fast")
}

// waitWalkNode waits, as README says, until `harn node status` in the
// shell answers from the node its last job started.
func waitWalkNode(t *testing.T, sh *walkShell, pid int) {
	t.Helper()
	environ := sh.environ()
	eventually(t, readyTimeout, "shell "+sh.name+"'s node answers", func() (bool, string) {
		if !pidAlive(pid) {
			t.Fatalf("shell %s's node (pid %d) exited", sh.name, pid)
		}
		st, ok := walkStatus(t, environ)
		return ok && st.PID == pid, fmt.Sprintf("%+v", st)
	})
}

// waitWalkMesh waits until the three nodes are alive members and the
// registry has a leader and three voters.
func waitWalkMesh(t *testing.T, environ []string) {
	t.Helper()
	eventually(t, meshTimeout, "nodeA, nodeB, nodeC alive, a leader and three voters", func() (bool, string) {
		var ms []memberJSON
		r := run(t, environ, "", "mesh", "members", "--json")
		if r.code != 0 {
			return false, r.String()
		}
		mustJSON(t, r.stdout, &ms)
		for _, n := range []string{"nodeA", "nodeB", "nodeC"} {
			if m, ok := memberOf(ms, n); !ok || m.Status != "alive" {
				return false, fmt.Sprintf("members %+v", ms)
			}
		}
		var ra raftJSON
		r = run(t, environ, "", "mesh", "raft", "--json")
		if r.code != 0 {
			return false, r.String()
		}
		mustJSON(t, r.stdout, &ra)
		return ra.Leader != "" && strings.Join(ra.voters(), ",") == "nodeA,nodeB,nodeC", fmt.Sprintf("raft %+v", ra)
	})
}

// installedHook is the command `harn hook install claude-code` wrote for
// event in the fresh HOME's ~/.claude/settings.json.
func installedHook(t *testing.T, home, event string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(home, ".claude", "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Hooks map[string][]struct {
			Hooks []struct {
				Type    string `json:"type"`
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("settings.json: %v\n%s", err, b)
	}
	for _, m := range s.Hooks[event] {
		for _, h := range m.Hooks {
			if h.Type == "command" && strings.Contains(h.Command, "hook claude-code") {
				return h.Command
			}
		}
	}
	t.Fatalf("no harn hook for %s in settings.json:\n%s", event, b)
	return ""
}

// eventOf is a Claude Code payload's hook_event_name.
func eventOf(t *testing.T, payload string) string {
	t.Helper()
	var p struct {
		Event string `json:"hook_event_name"`
	}
	mustJSON(t, payload, &p)
	return p.Event
}

// runHookCmd runs an installed hook command as Claude Code does: through
// the shell, in the session's directory, the payload on stdin.
// It takes no t: it also runs on a goroutine that may outlive a failed test.
func runHookCmd(environ []string, cwd, command, payload string) result {
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", command)
	cmd.Env, cmd.Dir, cmd.Stdin = environ, cwd, strings.NewReader(payload)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	r := result{args: []string{command}, stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		r.code = -1
		r.stderr += err.Error()
	}
	return r
}

// walkStatus is `harn node status --json` in environ; ok is false when
// no node answers.
func walkStatus(t *testing.T, environ []string) (nodeStatusJSON, bool) {
	t.Helper()
	r := run(t, environ, "", "node", "status", "--json")
	var st nodeStatusJSON
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &st) != nil {
		return nodeStatusJSON{}, false
	}
	return st, true
}
