package e2e

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// desktopFixture is the Claude Desktop data dir the desktop package's
// tests use.
const desktopFixture = "../desktop/testdata/tree"

// Entry files of the fixture, under claude-code-sessions.
const (
	anaDone    = "acct-ana/env-main/local_0a1.json" // desk-done-5b7d
	anaBlocked = "acct-ana/env-main/local_0a2.json" // desk-blocked-9c3a, [BLOCKED] title
	anaLegacy  = "acct-ana/env-main/local_0a3.json" // desk-legacy-0d6e, [DONE] title, unknown to harn
	anaActive  = "acct-ana/env-main/local_0a4.json" // desk-active-2f4b, [DONE] title
	boDone     = "acct-bo/env-main/local_0a1.json"  // desk-done-5b7d
	boOnly     = "acct-bo/env-main/local_0b2.json"  // desk-bo-only-1a77, archived
)

// copyDesktopFixture copies the fixture tree into dst.
func copyDesktopFixture(t *testing.T, dst string) {
	t.Helper()
	err := filepath.WalkDir(desktopFixture, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(desktopFixture, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// readEntries reads every entry file of a desktop tree, by relative path.
func readEntries(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	root := filepath.Join(dir, "claude-code-sessions")
	out := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func archived(t *testing.T, b []byte) bool {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return m["isArchived"] == true
}

// TestClaudeDesktopTidyArchivesDoneSessions records Claude Code sessions
// through real hooks on a real node, declares their lifecycles with
// `harn agents lifecycle`, and runs `harn claude-desktop` against a copy
// of the fixture tree: the dry run writes nothing, --yes archives exactly
// the entries whose session is done (never a [BLOCKED] title, never on a
// title alone), --include-legacy-prefix adds the [DONE] title harn does
// not know, and a second run writes nothing.
func TestClaudeDesktopTidyArchivesDoneSessions(t *testing.T) {
	e := newEnv(t)
	e.startNode()
	cwd := t.TempDir() // in no repository: the git finalization check passes
	desk := filepath.Join(t.TempDir(), "Claude")
	copyDesktopFixture(t, desk)

	for _, sid := range []string{"desk-done-5b7d", "desk-blocked-9c3a", "desk-active-2f4b", "desk-bo-only-1a77"} {
		e.hook("claude-code", claudeStart(sid, cwd))
		e.hook("claude-code", claudePrompt(sid, cwd))
	}
	for _, sid := range []string{"desk-done-5b7d", "desk-blocked-9c3a", "desk-active-2f4b"} {
		e.ok("agents", "set-task", "--session", sid, "the task of "+sid)
	}
	e.ok("agents", "lifecycle", "done", "--session", "desk-done-5b7d", "--reason", "shipped")
	e.ok("agents", "lifecycle", "done", "--session", "desk-blocked-9c3a", "--reason", "shipped")
	e.ok("agents", "lifecycle", "blocked", "--session", "desk-active-2f4b", "--reason", "waiting for review")
	e.ok("agents", "lifecycle", "active", "--session", "desk-active-2f4b")

	// sessions: every entry with its session's lifecycle.
	var rows []struct {
		File         string `json:"file"`
		Account      string `json:"account"`
		CLISessionID string `json:"cli_session_id"`
		Known        bool   `json:"harn_session_known"`
		TaskState    string `json:"task_state"`
		Declared     bool   `json:"lifecycle_declared"`
	}
	r := e.harn("", "claude-desktop", "sessions", "--json", "--data-dir", desk)
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	mustJSON(t, r.stdout, &rows)
	got := map[string]string{}
	for _, row := range rows {
		v := "-"
		if row.Known {
			v = row.TaskState
			if !row.Declared {
				v += " (default)"
			}
		}
		got[row.Account+"/env-main/"+row.File] = v
	}
	want := map[string]string{anaDone: "done", anaBlocked: "done", anaLegacy: "-", anaActive: "active",
		boDone: "done", boOnly: "active (default)"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("sessions: %v, want %v", got, want)
	}
	if !strings.Contains(r.stderr, "local_0a5.json") || !strings.Contains(r.stderr, "fix or remove") {
		t.Errorf("no warning naming the malformed entry: %q", r.stderr)
	}
	table := e.ok("claude-desktop", "sessions", "--data-dir", desk)
	if strings.ContainsRune(table, 0x1b) || !strings.Contains(table, "TASK STATE") {
		t.Errorf("the table must be sanitized and have a header:\n%s", table)
	}

	// The dry run says what it would do and writes nothing.
	before := readEntries(t, desk)
	dry := e.ok("claude-desktop", "tidy", "--data-dir", desk)
	for _, f := range []string{anaDone, boDone} {
		if !strings.Contains(dry, "would archive  "+f) {
			t.Errorf("dry run does not name %s:\n%s", f, dry)
		}
	}
	if !strings.Contains(dry, "pass --yes") {
		t.Errorf("dry run does not say how to apply:\n%s", dry)
	}
	if !reflect.DeepEqual(before, readEntries(t, desk)) {
		t.Fatal("the dry run wrote to the tree")
	}

	// --yes archives the done sessions' entries and nothing else.
	e.ok("claude-desktop", "tidy", "--yes", "--data-dir", desk)
	after := readEntries(t, desk)
	for f, b := range after {
		switch f {
		case anaDone, boDone:
			if !archived(t, b) {
				t.Errorf("%s not archived: %s", f, b)
			}
			var mb, ma map[string]any
			json.Unmarshal(before[f], &mb)
			json.Unmarshal(b, &ma)
			delete(mb, "isArchived")
			delete(ma, "isArchived")
			if !reflect.DeepEqual(mb, ma) {
				t.Errorf("%s: fields other than isArchived changed:\n%s\n%s", f, before[f], b)
			}
		default:
			if !bytes.Equal(b, before[f]) {
				t.Errorf("%s changed:\n%s\n->\n%s", f, before[f], b)
			}
		}
	}
	if len(after) != len(before) {
		t.Errorf("files %d, were %d (a temp file left behind?)", len(after), len(before))
	}

	// The legacy prefix adds the [DONE] title harn does not know, never
	// the [DONE] title whose session is active.
	e.ok("claude-desktop", "tidy", "--yes", "--include-legacy-prefix", "--data-dir", desk)
	legacy := readEntries(t, desk)
	if !archived(t, legacy[anaLegacy]) || archived(t, legacy[anaActive]) || archived(t, legacy[anaBlocked]) {
		t.Errorf("after --include-legacy-prefix: legacy %v, active %v, blocked %v",
			archived(t, legacy[anaLegacy]), archived(t, legacy[anaActive]), archived(t, legacy[anaBlocked]))
	}

	// Idempotent: nothing left to do, nothing written.
	if out := e.ok("claude-desktop", "tidy", "--yes", "--include-legacy-prefix", "--data-dir", desk); !strings.Contains(out, "nothing to archive") {
		t.Errorf("second run:\n%s", out)
	}
	if !reflect.DeepEqual(legacy, readEntries(t, desk)) {
		t.Error("a second run wrote to the tree")
	}
}

// TestClaudeDesktopMirrorThroughCLI: mirror is a dry run without --yes;
// with it every account lists every session, and a second run copies
// nothing.
func TestClaudeDesktopMirrorThroughCLI(t *testing.T) {
	e := newEnv(t)
	desk := filepath.Join(t.TempDir(), "Claude")
	copyDesktopFixture(t, desk)
	before := readEntries(t, desk)
	if out := e.ok("claude-desktop", "mirror", "--data-dir", desk); !strings.Contains(out, "dry run: 9 entries to copy") {
		t.Fatalf("dry run:\n%s", out)
	}
	if !reflect.DeepEqual(before, readEntries(t, desk)) {
		t.Fatal("the dry run wrote to the tree")
	}
	e.ok("claude-desktop", "mirror", "--yes", "--data-dir", desk)
	after := readEntries(t, desk)
	if len(after) != len(before)+9 {
		t.Fatalf("%d files, want %d", len(after), len(before)+9)
	}
	if !bytes.Equal(after["acct-cy/env-cy/local_0b2.json"], before[boOnly]) {
		t.Errorf("acct-cy's copy of %s differs from its source", boOnly)
	}
	if out := e.ok("claude-desktop", "mirror", "--yes", "--data-dir", desk); !strings.Contains(out, "every account already lists every session") {
		t.Errorf("second run:\n%s", out)
	}
	if !reflect.DeepEqual(after, readEntries(t, desk)) {
		t.Error("a second run wrote to the tree")
	}
}

// TestClaudeDesktopBadDataDirIsOneLineError: an unreadable data dir exits
// 2 with one line naming the folder and --data-dir; an empty one lists
// nothing and starts no node; without --data-dir the
// command reads Claude Desktop's default folder, never harn's own state
// dir (HARN_DATA_DIR).
func TestClaudeDesktopBadDataDirIsOneLineError(t *testing.T) {
	e := newEnv(t)
	missing := filepath.Join(t.TempDir(), "nosuch")
	r := e.harn("", "claude-desktop", "mirror", "--data-dir", missing)
	if r.code != 2 || !strings.Contains(r.stderr, missing) || !strings.Contains(r.stderr, "--data-dir") {
		t.Fatalf("want exit 2 naming %s and --data-dir: %v", missing, r)
	}
	oneLineErr(t, r)

	// A data dir with no entries needs no node: none is started.
	if out := e.ok("claude-desktop", "sessions", "--data-dir", t.TempDir()); !strings.Contains(out, "no Claude Code entries") {
		t.Errorf("empty data dir:\n%s", out)
	}
	if !socketDead(e.socket) {
		t.Error("listing an empty data dir started a node")
	}

	if runtime.GOOS != "linux" {
		return
	}
	// The env's XDG_CONFIG_HOME is root/xdg-config: the default on Linux.
	copyDesktopFixture(t, filepath.Join(e.root, "xdg-config", "Claude"))
	if out := e.ok("claude-desktop", "mirror"); !strings.Contains(out, "dry run: 9 entries to copy") {
		t.Fatalf("default data dir:\n%s", out)
	}
}
