package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harn-dev/harn/node"
	"github.com/harn-dev/harn/node/spool"
	"github.com/harn-dev/harn/presence"
)

// Local users and untrusted input: a private data dir, a socket that only
// its user's clients talk to, escape sequences that never reach a
// terminal, and event times from the future.

const exitPermission = 13

// TestDataDir0755TightenedByNode: `harn node` on a data dir that exists as
// 0755 with a 0644 file leaves the dir and every file in it 0700/0600,
// Pebble's WAL included, whatever the umask it was started with.
func TestDataDir0755TightenedByNode(t *testing.T) {
	e := newEnv(t)
	if err := os.MkdirAll(e.dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(e.dataDir, 0o755)
	if err := os.WriteFile(filepath.Join(e.dataDir, "old.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(e.dataDir, "old.txt"), 0o644)
	n := e.startNode("--no-mesh")
	e.hook("claude-code", claudePrompt("perm-1", e.root))
	eventually(t, stateTimeout, "heartbeat written", func() (bool, string) {
		_, err := os.Stat(e.heartbeatPath("perm-1"))
		return err == nil, "no heartbeat"
	})
	e.stopNode(n)
	walked := 0
	filepath.WalkDir(e.dataDir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return nil
		}
		want := os.FileMode(0o600)
		if fi.IsDir() {
			want = 0o700
		} else if !fi.Mode().IsRegular() {
			return nil
		}
		walked++
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %04o, want %04o", p, fi.Mode().Perm(), want)
		}
		return nil
	})
	if walked < 8 {
		t.Fatalf("walked only %d entries of the data dir", walked)
	}
}

// TestSquattedSocketRefusedByClientAndHook: a socket path that another
// user made first (here: a listening socket chowned to nobody) is refused
// by the CLI with exit 13 before it connects, and the hook sends it
// nothing: the events are spooled with a diagnostic, and a node started
// later takes both.
func TestSquattedSocketRefusedByClientAndHook(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to make a socket owned by another user")
	}
	e := newEnv(t)
	l, err := net.Listen("unix", e.socket)
	if err != nil {
		t.Fatal(err)
	}
	ul := l.(*net.UnixListener)
	defer ul.Close()
	if err := os.Chown(e.socket, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"agents", "list"}, {"node", "status"}, {"node", "errors"}} {
		r := e.harn("", args...)
		if r.code != exitPermission || !strings.Contains(r.stderr, "uid 65534") {
			t.Errorf("%v", r)
		}
		oneLineErr(t, r)
	}
	e.hook("claude-code", claudePrompt("squat-1", e.root))
	// Nothing connected: a connection the hook made would wait in the
	// listener's backlog; the deadline bounds the look.
	ul.SetDeadline(time.Now().Add(200 * time.Millisecond))
	if c, err := ul.Accept(); err == nil {
		b, _ := io.ReadAll(io.LimitReader(c, 64))
		c.Close()
		t.Fatalf("the hook connected to a socket owned by another user (sent %q)", b)
	}
	if got := len(e.spoolPending()); got < 2 {
		t.Fatalf("spool holds %d records; want the events and a diagnostic", got)
	}
	ul.Close()
	os.Remove(e.socket)
	e.startNode("--no-mesh")
	if s := e.show("squat-1"); s.SessionID != "squat-1" {
		t.Fatalf("spooled session not drained: %+v", s)
	}
	if out := e.ok("node", "errors"); !strings.Contains(out, "uid 65534") {
		t.Fatalf("node errors lacks the socket diagnostic:\n%s", out)
	}
}

// TestSocketEACCESReportedAsPermission: a socket that answers EACCES is a
// permission problem (exit 13, one line), not "no node" (exit 5).
func TestSocketEACCESReportedAsPermission(t *testing.T) {
	dir, err := os.MkdirTemp("", "hx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	sock := filepath.Join(dir, "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	environ := cleanEnv(dir)
	bin := harnBin
	var cred *syscall.Credential
	if os.Getuid() == 0 {
		// root passes every permission check: run the client as nobody,
		// the socket's owner, with the socket closed to its owner.
		if err := os.Chown(sock, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		bin = filepath.Join(dir, "harn")
		if err := os.Link(harnBin, bin); err != nil {
			t.Skipf("cannot place the binary for another user: %v", err)
		}
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	if err := os.Chmod(sock, 0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "agents", "list", "--socket", sock, "--data-dir", filepath.Join(dir, "data"))
	cmd.Env = environ
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitPermission {
		t.Fatalf("agents list on an EACCES socket: %v; stderr %q; want exit %d", err, errb.String(), exitPermission)
	}
	r := result{args: cmd.Args[1:], code: ee.ExitCode(), stdout: out.String(), stderr: errb.String()}
	oneLineErr(t, r)
	if !strings.Contains(r.stderr, "permission denied") || strings.Contains(r.stderr, "no harn node") {
		t.Fatalf("stderr %q; want a permission problem, not a missing node", r.stderr)
	}
}

// evil holds every kind of terminal control an agent or a peer could send:
// ESC sequences (CSI, OSC with BEL), a bare BEL, CR, a C1 CSI, DEL.
const evil = "\x1b[2J\x1b]0;pwned\x07\x1b[31mred\rover\x07\u009b1m\x7f"

// controls reports the control characters (C0 but \n and \t, DEL, C1) in s.
func controls(s string) []rune {
	var out []rune
	for _, r := range s {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			out = append(out, r)
		}
	}
	return out
}

// evilEnv starts a node named with escape sequences and feeds it, through
// the spool (the hooks' own path), a session whose id, cwd, task, blocker
// reason and end reason hold them, and a diagnostic whose source and error
// hold them. It returns the env and the session id.
func evilEnv(t *testing.T) (*env, string) {
	e := newEnv(t)
	sid := "esc-" + evil
	now := time.Now().UTC()
	at := func(ms int) time.Time { return now.Add(time.Duration(ms) * time.Millisecond) }
	evs := []presence.Event{
		{ID: "esc-1", SessionID: sid, Type: presence.TypeSessionStart, TS: at(0), Agent: "claude-code",
			Attrs: map[string]any{presence.AttrCwd: "/home/ana/" + evil, presence.AttrRepo: "repo" + evil, presence.AttrBranch: "br" + evil}},
		{ID: "esc-2", SessionID: sid, Type: presence.TypeTaskSet, TS: at(1), Agent: "claude-code",
			Attrs: map[string]any{presence.AttrTask: "task " + evil}},
		{ID: "esc-3", SessionID: sid, Type: presence.TypeTaskState, TS: at(2), Agent: "claude-code",
			Attrs: map[string]any{presence.AttrTaskState: "blocked", presence.AttrReason: "reason " + evil}},
		{ID: "esc-4", SessionID: sid, Type: presence.TypeSessionEnd, TS: at(3), Agent: "claude-code",
			Attrs: map[string]any{presence.AttrReason: "end " + evil}},
	}
	dir := node.SpoolDir(e.dataDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := spool.Write(dir, now, "esc-events", spool.Record{Events: evs}); err != nil {
		t.Fatal(err)
	}
	if _, err := spool.Write(dir, now, "esc-diag", spool.Record{Diagnostic: &spool.Diagnostic{TS: now,
		Source: "hook " + evil, Error: "bad input " + evil}}); err != nil {
		t.Fatal(err)
	}
	// A name with escapes cannot be in a mesh certificate, so the node
	// that carries one runs plaintext (--insecure-mesh); a TLS node refuses
	// such a name at its first start.
	e.startNode("--name", "node"+evil[:4]+"x", "--bind", "127.0.0.1", "--insecure-mesh")
	// A hook named with escapes records a diagnostic too.
	e.hook(evil, "{}")
	return e, sid
}

// TestEscapeSequencesNeverReachNodeAndMeshOutput: no control character
// from agent or network text reaches the human output of `harn node
// errors`, `harn node status` or `harn mesh members`, while the JSON
// output keeps the text whole.
func TestEscapeSequencesNeverReachNodeAndMeshOutput(t *testing.T) {
	e, _ := evilEnv(t)
	eventually(t, stateTimeout, "diagnostics recorded", func() (bool, string) {
		out := e.ok("node", "errors", "--json")
		return strings.Count(out, "pwned") >= 2, out
	})
	for _, args := range [][]string{{"node", "errors"}, {"node", "status"}, {"mesh", "members"}} {
		out := e.ok(args...)
		if c := controls(out); len(c) > 0 {
			t.Errorf("harn %s printed control characters %q:\n%q", strings.Join(args, " "), c, out)
		}
		if args[0] == "node" && args[1] == "errors" && !strings.Contains(out, "pwned") {
			t.Errorf("node errors lost the text around the escapes:\n%s", out)
		}
	}
	if out := e.ok("node", "errors", "--json"); !strings.Contains(out, `\u001b`) {
		t.Errorf("the JSON output should keep the text, escaped: %s", out)
	}
}

// TestEscapeSequencesNeverReachAgentsShow: the human output of `harn
// agents show` and `harn agents list --all` carries no control character
// from the session id, cwd, task, reasons or the node name.
func TestEscapeSequencesNeverReachAgentsShow(t *testing.T) {
	e, sid := evilEnv(t)
	eventually(t, stateTimeout, "session drained", func() (bool, string) {
		return inList(e.list(true), sid), "not listed"
	})
	for _, args := range [][]string{{"agents", "show", sid}, {"agents", "list", "--all"}} {
		out := e.ok(args...)
		if c := controls(out); len(c) > 0 {
			t.Errorf("harn %s printed control characters %q:\n%q", args[:2], c, out)
		}
	}
}

// TestFutureDatedGeminiEventStoredAtReceiptTime: one Gemini event dated
// 2100 is stored at the node's time with attrs.orig_ts and flagged in
// `harn node errors`; the session is not pinned `working` until 2100, and
// its end is stamped at the time it happened.
func TestFutureDatedGeminiEventStoredAtReceiptTime(t *testing.T) {
	e := newEnv(t)
	e.startNode("--no-mesh")
	sid := "gemini-future-0001"
	y2100 := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	before := time.Now().UTC()
	e.hook("gemini", geminiAt(sid, e.root, "BeforeTool", y2100, `"tool_name":"run_shell_command","tool_input":{"command":"npm test"}`))
	s := e.show(sid)
	if at := parseTS(t, s.ActivityUpdatedAt); s.Activity != "working" || at.Year() != before.Year() || at.Before(before.Add(-time.Second)) {
		t.Fatalf("after a 2100 event: %s since %s; want working since about now", s.Activity, s.ActivityUpdatedAt)
	}
	evs := e.trace(sid)
	if len(evs) == 0 || evs[0].Attrs["orig_ts"] != "2100-01-01T00:00:00.000Z" {
		t.Fatalf("trace %+v; want attrs.orig_ts 2100-01-01T00:00:00.000Z", evs)
	}
	if out := e.ok("node", "errors"); !strings.Contains(out, "2100-01-01") || !strings.Contains(out, "clock") {
		t.Fatalf("node errors does not flag the 2100 event:\n%s", out)
	}
	e.hook("gemini", geminiAt(sid, e.root, "AfterAgent", time.Now().UTC(), `"prompt":"x","prompt_response":"done","stop_hook_active":false`))
	if s = e.show(sid); s.Activity != "idle" {
		t.Fatalf("activity %s after AfterAgent; the 2100 event pins it", s.Activity)
	}
	e.hook("gemini", geminiAt(sid, e.root, "SessionEnd", time.Now().UTC(), `"reason":"exit"`))
	var ended struct {
		Ended   bool   `json:"ended"`
		EndedAt string `json:"ended_at"`
	}
	mustJSON(t, e.ok("agents", "show", sid, "--json"), &ended)
	if !ended.Ended || parseTS(t, ended.EndedAt).After(time.Now().Add(time.Minute)) {
		t.Fatalf("ended %v at %s; want ended now", ended.Ended, ended.EndedAt)
	}
}

// TestUnixEpochEventIsValid: a Gemini event stamped exactly at the Unix
// epoch is stored at that time (old, but valid), not refused.
func TestUnixEpochEventIsValid(t *testing.T) {
	e := newEnv(t)
	e.startNode("--no-mesh")
	sid := "gemini-epoch-00001"
	e.hook("gemini", geminiAt(sid, e.root, "SessionStart", time.Unix(0, 0), `"source":"startup"`))
	evs := e.trace(sid)
	if len(evs) != 1 || evs[0].TS != "1970-01-01T00:00:00.000Z" {
		t.Fatalf("trace %+v; want one event at the epoch", evs)
	}
}
