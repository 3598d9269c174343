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

// walkSteps are the walk's blocks, in the order a reader meets them:
// README's quick start, then docs/first-hour.md. The test fails when one
// is missing, renamed or moved, so that the pages and this test stay one.
var walkSteps = []string{"install", "run", "wire", "nodeA", "nodeB", "nodeC", "mesh", "approve", "crash"}

// walkPages are the pages that hold the walk, in reading order.
var walkPages = []string{"README.md", filepath.Join("docs", "first-hour.md")}

var (
	readmePort = regexp.MustCompile(`\b(77[234][0-3]|8080)\b`)
	requestID  = regexp.MustCompile(`\br-[0-9A-Za-z]{4,}(@[A-Za-z0-9._-]+)?`)
)

// TestReadmeWalk types README's quick start and then the first hour
// (docs/first-hour.md) into bash shells on a fresh HOME, in order, as a
// person would: `make install` for real; `make run` in a terminal of its
// own, which must log no warning, print its board's URL (which opens the
// board) and the next commands, which the next block must be and which
// run as printed; then, beside that node, a three-node mesh whose start
// and join commands are the ones harn printed (each checked against the
// page's line, then run as printed), each node's printed hints run too,
// Claude Code wired by `harn hook install` and driven through the
// installed hook command with its real payloads, a webhook, an approval
// from node B of a request that waits on node A, a kill -9 of node A by
// the pid it gives and its restart; last, Ctrl+C stops `make run`. The
// only changes to the pages' lines are free ports for 7720-7743 and
// 8080 (and, in the quick start's environment, for the default ports),
// and the printed token and request id for `harn1.…` and `r-…`.
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
	var pages []string
	for _, p := range walkPages {
		pages = append(pages, filepath.Join(repo, p))
	}
	steps := readmeWalk(t, pages...)
	var names []string
	for _, s := range steps {
		names = append(names, s.name)
	}
	if strings.Join(names, ",") != strings.Join(walkSteps, ",") {
		t.Fatalf("the walk has steps %v, want %v", names, walkSteps)
	}

	home := t.TempDir()
	work := t.TempDir() // the shells' outputs
	srv := newHookServer(t, 0)
	_, srvPort, _ := strings.Cut(strings.TrimPrefix(srv.URL, "http://"), ":")
	taken := map[int]bool{}
	ports := map[string]string{"8080": srvPort}
	for _, n := range []string{"2", "3", "4"} {
		p := freeBlock(t, 4, taken)
		for i := 0; i < 4; i++ {
			ports["77"+n+strconv.Itoa(i)] = strconv.Itoa(p + i)
		}
	}
	subst := func(l string) string {
		return readmePort.ReplaceAllStringFunc(l, func(p string) string { return ports[p] })
	}
	environ := walkEnv(t, home)
	// The quick start's node runs on the defaults but for its ports:
	// tests run side by side on this machine.
	q := freeBlock(t, 4, taken)
	quickEnv := append(append([]string(nil), environ...), "HARN_GOSSIP_PORT="+strconv.Itoa(q),
		"HARN_RAFT_PORT="+strconv.Itoa(q+1), "HARN_RPC_PORT="+strconv.Itoa(q+2), "HARN_HTTP_PORT="+strconv.Itoa(q+3))

	shells := map[string]*walkShell{}
	shell := func(name string) *walkShell {
		if s, ok := shells[name]; ok {
			return s
		}
		env := environ
		if name == steps[0].shell {
			env = quickEnv
		}
		s := startShell(t, name, work, repo, env)
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
	starts := map[string]int{} // a log's node starts so far
	var quick *walkTerm
	var banner nodeBanner
	reqID := ""
	sid, cwd := "cc-readme-walk", t.TempDir()
	qsid, qcwd := "cc-quick-start", t.TempDir()
	var permDone chan result
	var eventsBefore int
	var nodeApid int

	// before and after are the person's part between the pages' lines:
	// reading the output, waiting, running Claude Code.
	before := map[string]func(){
		"wire": func() {
			// The block is what make run said to run next, in order.
			var cmds []string
			for _, l := range stepNamed(t, steps, "wire").lines {
				if c := command(l); strings.HasPrefix(c, "harn ") {
					cmds = append(cmds, c)
				}
			}
			if strings.Join(cmds, "; ") != strings.Join(banner.next, "; ") {
				t.Fatalf("README's quick start runs %q next; make run printed %q", cmds, banner.next)
			}
		},
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
		"wire": func() {
			// Claude Code started in this terminal reports to make run's
			// node, and the roster shows it.
			r := shells["R"]
			envR := r.environ()
			for _, p := range []string{claudeStart(qsid, qcwd), claudePrompt(qsid, qcwd)} {
				if res := runHookCmd(envR, qcwd, installedHook(t, home, eventOf(t, p)), p); res.code != 0 {
					t.Fatalf("the installed hook: %v", res)
				}
			}
			var ss []sessionJSON
			mustJSON(t, run(t, envR, "", "agents", "list", "--json").stdout, &ss)
			if !inList(ss, qsid) {
				t.Fatalf("the quick start's session is not in the roster: %+v", ss)
			}
			// The board hint runs as printed and prints the same URL.
			if out := strings.TrimSpace(r.must(banner.webURL, cmdTimeout)); out != banner.board {
				t.Fatalf("%q printed %q, make run printed %q", banner.webURL, out, banner.board)
			}
		},
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
		if st.terminal {
			// A foreground command: its own terminal, kept; the banner it
			// prints says where the board is and what to run next.
			if quick != nil || len(st.lines) != 1 {
				t.Fatalf("step %s: one foreground command in the walk, its only line", st.name)
			}
			quick = startTerm(t, subst(command(st.lines[0])), repo, sh.environ())
			out := quick.waitFor("stop   Ctrl+C", 5*time.Minute)
			t.Logf("%s$ %s\n%s", st.shell, st.lines[0], out)
			banner = readBanner(t, out)
			checkBoardURL(t, banner.board)
			continue
		}
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
				// The join line: the command token create printed.
				if !sameHint(words, joinHint) {
					t.Fatalf("step %s: %s's %q is not the printed %q", st.name, st.file, cmd, strings.Join(joinHint, " "))
				}
				cmd = strings.Join(joinHint, " ") + " " + rest
			case bgNode && startHint != nil:
				if !sameHint(words, startHint) {
					t.Fatalf("step %s: %s's %q is not the printed %q", st.name, st.file, cmd, strings.Join(startHint, " "))
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
			if code != 0 {
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
				runLogHints(t, sh, home, rest, starts)
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
	// Ctrl+C stops make run's node; from its start to its stop it logged
	// no warning.
	quick.interrupt(stopBound)
	noWarnings(t, "make run", quick.output())
}

// stepNamed is the walk's step name.
func stepNamed(t *testing.T, steps []walkStep, name string) walkStep {
	t.Helper()
	for _, s := range steps {
		if s.name == name {
			return s
		}
	}
	t.Fatalf("the walk has no step %s", name)
	return walkStep{}
}

// stopBound bounds a node's stop after Ctrl+C (harnd gives up at 4.5 s).
const stopBound = 15 * time.Second

// runLogHints runs, in sh, the commands the node's ready record names in
// its log (the file rest appends to), as printed: each must exit 0. It
// waits for this start's record: starts counts the log's earlier ones.
func runLogHints(t *testing.T, sh *walkShell, home, rest string, starts map[string]int) {
	t.Helper()
	f := strings.Fields(rest)
	if len(f) == 0 || !strings.HasPrefix(f[0], ">>") {
		t.Fatalf("the node's redirect %q names no log", rest)
	}
	path := strings.TrimPrefix(f[0], ">>")
	if strings.HasPrefix(path, "~/") {
		path = filepath.Join(home, path[2:])
	}
	starts[path]++
	var hints []string
	eventually(t, readyTimeout, "the node's ready record in "+path, func() (bool, string) {
		var n int
		hints, n = logHints(t, path)
		return n >= starts[path] && len(hints) >= 2, fmt.Sprint(n, hints)
	})
	for _, h := range hints {
		out := sh.must(h, cmdTimeout)
		t.Logf("%s$ %s   # printed by the node\n%s", sh.name, h, out)
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
