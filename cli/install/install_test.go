package install

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/presence/adapter/all"
)

const bin = "/opt/harn/bin/harn"

// Existing settings with the user's own keys and hooks, per agent.
var userFiles = map[string]string{
	"claude-code": `{
  "model": "opus",
  "permissions": {"allow": ["Bash(go test:*)"], "deny": []},
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard.sh", "timeout": 5}]}
    ],
    "Stop": [
      {"hooks": [{"type": "command", "command": "say done & echo <ok>"}]}
    ],
    "TeammateIdle": [{"hooks": [{"type": "command", "command": "notify-send idle"}]}]
  },
  "env": {"FOO": "bar"}
}
`,
	"codex": `{"hooks":{"PreToolUse":[{"matcher":"^Bash$","hooks":[{"type":"command","command":"python3 ~/.codex/guard.py","statusMessage":"checking"}]}],"SessionStart":[{"matcher":"startup","hooks":[{"type":"command","command":"echo hi"}]}]},"x-user":{"keep":true}}`,
	"cursor": `{
  "version": 1,
  "hooks": {
    "afterFileEdit": [{"command": "./hooks/format.sh"}],
    "beforeShellExecution": [{"command": "./hooks/block-git.sh", "timeout": 5}],
    "afterTabFileEdit": [{"command": "./hooks/format-tab.sh"}]
  }
}`,
	"gemini": `{
  "general": {"vimMode": true},
  "hooksConfig": {"enabled": true},
  "hooks": {
    "BeforeTool": [{"matcher": "run_shell_command", "hooks": [{"name": "audit", "type": "command", "command": "$GEMINI_PROJECT_DIR/.gemini/hooks/audit.sh", "timeout": 3000}]}]
  }
}`,
}

func opts(t *testing.T, agent string) Options {
	home := t.TempDir()
	return Options{Agent: agent, Scope: ScopeUser, Home: home, Command: bin, Now: time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC)}
}

func agentEvents(t *testing.T, agent string) []string {
	t.Helper()
	return specs()[agent].events
}

// harnEvents lists the events under which the file holds harn's command
// for agent, with the number of harn entries for each.
func harnEvents(t *testing.T, b []byte, agent string) map[string]int {
	t.Helper()
	var f struct {
		Hooks map[string][]map[string]any `json:"hooks"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("file is not valid settings: %v\n%s", err, b)
	}
	out := map[string]int{}
	for ev, list := range f.Hooks {
		for _, item := range list {
			hs := []any{item}
			if h, ok := item["hooks"].([]any); ok {
				hs = h
			}
			for _, h := range hs {
				if m, ok := h.(map[string]any); ok && m["command"] == bin+" hook "+agent {
					out[ev]++
				}
			}
		}
	}
	return out
}

func decode(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, b)
	}
	return v
}

func TestInstallFresh(t *testing.T) {
	for _, agent := range Agents() {
		t.Run(agent, func(t *testing.T) {
			o := opts(t, agent)
			r, err := Install(o)
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(r.Path)
			if err != nil {
				t.Fatal(err)
			}
			if !r.Changed || r.Backup != "" || r.Before != nil || string(r.After) != string(b) {
				t.Fatalf("report %+v", r)
			}
			if !slices.Equal(r.Added, agentEvents(t, agent)) {
				t.Errorf("Added = %q; want %q", r.Added, agentEvents(t, agent))
			}
			got := harnEvents(t, b, agent)
			for _, ev := range agentEvents(t, agent) {
				if got[ev] != 1 {
					t.Errorf("event %s has %d harn entries; want 1", ev, got[ev])
				}
			}
			if agent == "cursor" && !strings.HasPrefix(string(b), "{\n  \"version\": 1,") {
				t.Errorf("cursor file does not start with version 1:\n%s", b)
			}
			if st, err := os.Stat(filepath.Dir(r.Path)); err != nil || st.Mode().Perm() != 0o755 {
				t.Errorf("settings folder: %v %v", st, err)
			}
		})
	}
}

// TestEveryMappedEventRegistered: install registers exactly the events each
// adapter lists, and each of those is a real adapter.
func TestEveryMappedEventRegistered(t *testing.T) {
	for _, agent := range Agents() {
		if _, ok := all.Lookup(agent); !ok {
			t.Errorf("installable agent %s has no adapter", agent)
		}
		if len(specs()[agent].events) == 0 {
			t.Errorf("%s registers no event", agent)
		}
	}
}

func TestInstallOverUserHooksAndUninstall(t *testing.T) {
	for _, agent := range Agents() {
		t.Run(agent, func(t *testing.T) {
			o := opts(t, agent)
			path, _ := Path(o)
			orig := []byte(userFiles[agent])
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, orig, 0o600); err != nil {
				t.Fatal(err)
			}
			r, err := Install(o)
			if err != nil {
				t.Fatal(err)
			}
			after, _ := os.ReadFile(path)
			if backup, err := os.ReadFile(path + BackupSuffix); err != nil || string(backup) != string(orig) || r.Backup != path+BackupSuffix {
				t.Fatalf("backup %q (%v) is not the original file", backup, err)
			}
			if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
				t.Errorf("mode %v; want the file's 0600 kept", st.Mode().Perm())
			}
			// Everything of the user's is still there.
			origV, afterV := decode(t, orig).(map[string]any), decode(t, after).(map[string]any)
			for k, v := range origV {
				if k == "hooks" {
					continue
				}
				if !reflect.DeepEqual(afterV[k], v) {
					t.Errorf("user key %s changed: %v -> %v", k, v, afterV[k])
				}
			}
			origHooks, afterHooks := origV["hooks"].(map[string]any), afterV["hooks"].(map[string]any)
			for ev, list := range origHooks {
				for _, item := range list.([]any) {
					if !slices.ContainsFunc(afterHooks[ev].([]any), func(x any) bool { return reflect.DeepEqual(x, item) }) {
						t.Errorf("user hook %s %v lost", ev, item)
					}
				}
			}
			// The user's keys keep their order.
			if i, j := strings.Index(string(after), firstKey(agent)), strings.Index(string(after), `"hooks"`); i < 0 || (agent != "codex" && i > j) {
				t.Errorf("key order changed:\n%s", after)
			}

			// Idempotent: nothing changes, nothing is written, no backup made.
			if err := os.Remove(path + BackupSuffix); err != nil {
				t.Fatal(err)
			}
			r2, err := Install(o)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := os.ReadFile(path)
			if r2.Changed || len(r2.Added) > 0 || string(again) != string(after) || r2.Backup != "" {
				t.Fatalf("second install changed something: %+v", r2)
			}
			if _, err := os.Stat(path + BackupSuffix); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("second install wrote a backup: %v", err)
			}

			// Uninstall gives the user's settings back.
			u, err := Uninstall(o)
			if err != nil {
				t.Fatal(err)
			}
			restored, _ := os.ReadFile(path)
			if !u.Changed || !reflect.DeepEqual(decode(t, restored), decode(t, orig)) {
				t.Fatalf("uninstall did not restore the user's file:\n%s\nwant\n%s", restored, orig)
			}
			slices.Sort(u.Removed)
			want := slices.Clone(agentEvents(t, agent))
			slices.Sort(want)
			if !slices.Equal(u.Removed, want) {
				t.Errorf("Removed = %q; want %q", u.Removed, want)
			}
			u2, err := Uninstall(o)
			if err != nil || u2.Changed {
				t.Fatalf("second uninstall: %+v %v", u2, err)
			}
		})
	}
}

func firstKey(agent string) string {
	return map[string]string{"claude-code": `"model"`, "codex": `"x-user"`, "cursor": `"version"`, "gemini": `"general"`}[agent]
}

func TestUninstallKeepsSharedGroups(t *testing.T) {
	o := opts(t, "claude-code")
	path, _ := Path(o)
	_ = os.MkdirAll(filepath.Dir(path), 0o755)
	shared := `{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"/usr/local/bin/harn hook claude-code"},{"type":"command","command":"~/bin/log.sh"}]}],` +
		`"Stop":[{"hooks":[{"type":"command","command":"/old/harn hook claude-code"}]},{"hooks":[{"type":"command","command":"harnish hook cursor"}]}]}}`
	if err := os.WriteFile(path, []byte(shared), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Uninstall(o); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	want := `{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"~/bin/log.sh"}]}],"Stop":[{"hooks":[{"type":"command","command":"harnish hook cursor"}]}]}}`
	if !reflect.DeepEqual(decode(t, b), decode(t, []byte(want))) {
		t.Fatalf("got\n%s\nwant\n%s", b, want)
	}
}

func TestInstallReplacesStaleCommand(t *testing.T) {
	o := opts(t, "codex")
	o.Command = "/old place/harn"
	if _, err := Install(o); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(mustPath(t, o))
	if !strings.Contains(string(b), `"\"/old place/harn\" hook codex"`) {
		t.Fatalf("a path with a space is not quoted:\n%s", b)
	}
	o.Command = bin
	r, err := Install(o)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(r.Path)
	if !r.Changed || len(r.Replaced) != len(agentEvents(t, "codex")) || len(r.Added) != 0 || strings.Contains(string(b), "old place") {
		t.Fatalf("stale command kept: %+v\n%s", r, b)
	}
	if s := r.Summary(); !strings.Contains(s, "replace ") || strings.Contains(s, "add ") {
		t.Errorf("a reinstall that replaces entries must say replace, not add:\n%s", s)
	}
	for ev, n := range harnEvents(t, b, "codex") {
		if n != 1 {
			t.Errorf("%s has %d harn entries", ev, n)
		}
	}
}

func mustPath(t *testing.T, o Options) string {
	t.Helper()
	p, err := Path(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDryRun(t *testing.T) {
	for _, agent := range Agents() {
		t.Run(agent, func(t *testing.T) {
			o := opts(t, agent)
			o.DryRun = true
			r, err := Install(o)
			if err != nil {
				t.Fatal(err)
			}
			if !r.Changed || len(r.After) == 0 || r.Before != nil {
				t.Fatalf("dry run report %+v", r)
			}
			if _, err := os.Stat(filepath.Dir(r.Path)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("dry run created %s", filepath.Dir(r.Path))
			}
			if !strings.Contains(r.Summary(), "dry run") {
				t.Errorf("summary does not say dry run: %s", r.Summary())
			}
			// Over an existing file: nothing written, no backup.
			_ = os.MkdirAll(filepath.Dir(r.Path), 0o755)
			_ = os.WriteFile(r.Path, []byte(userFiles[agent]), 0o644)
			r, err = Install(o)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(r.Path)
			if string(b) != userFiles[agent] || string(r.Before) != userFiles[agent] || r.Backup != "" {
				t.Fatal("dry run touched the file")
			}
			if _, err := os.Stat(r.Path + BackupSuffix); !errors.Is(err, os.ErrNotExist) {
				t.Fatal("dry run wrote a backup")
			}
		})
	}
}

func TestRefusesBadSettings(t *testing.T) {
	bad := map[string]string{
		"invalid JSON":        `{"hooks": {"Stop": [`,
		"trailing garbage":    `{} {}`,
		"top level array":     `[]`,
		"hooks not an object": `{"hooks": []}`,
		"event not a list":    `{"hooks": {"Stop": {"command": "x"}, "stop": {}, "AfterAgent": 1}}`, // one per agent's naming
	}
	for _, agent := range Agents() {
		for name, content := range bad {
			t.Run(agent+"/"+name, func(t *testing.T) {
				o := opts(t, agent)
				path := mustPath(t, o)
				_ = os.MkdirAll(filepath.Dir(path), 0o755)
				_ = os.WriteFile(path, []byte(content), 0o644)
				_, err := Install(o)
				if !errors.Is(err, ErrBadSettings) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "move it aside") {
					t.Fatalf("error %v; want ErrBadSettings naming %s", err, path)
				}
				entries, _ := os.ReadDir(filepath.Dir(path))
				if b, _ := os.ReadFile(path); string(b) != content || len(entries) != 1 {
					t.Fatalf("refused file was touched or files were left: %v", entries)
				}
				if _, err := Uninstall(o); name != "event not a list" && !errors.Is(err, ErrBadSettings) {
					t.Fatalf("uninstall error %v; want ErrBadSettings", err)
				}
			})
		}
	}
}

func TestOptionsErrors(t *testing.T) {
	o := opts(t, "claude-code")
	for name, c := range map[string]struct {
		mod  func(*Options)
		want error
	}{
		"unknown agent":       {func(o *Options) { o.Agent = "vim" }, ErrUnknownAgent},
		"notify not hooks":    {func(o *Options) { o.Agent = "codex-notify" }, ErrUnknownAgent},
		"bad scope":           {func(o *Options) { o.Scope = "global" }, ErrBadScope},
		"user without home":   {func(o *Options) { o.Home = "" }, ErrBadScope},
		"project without dir": {func(o *Options) { o.Scope = ScopeProject }, ErrBadScope},
		"relative command":    {func(o *Options) { o.Command = "bin/harn" }, ErrBadCommand},
		"no command":          {func(o *Options) { o.Command = "" }, ErrBadCommand},
	} {
		t.Run(name, func(t *testing.T) {
			o := o
			c.mod(&o)
			if _, err := Install(o); !errors.Is(err, c.want) {
				t.Fatalf("error %v; want %v", err, c.want)
			}
		})
	}
}

func TestPaths(t *testing.T) {
	for agent, want := range map[string]string{
		"claude-code": "/p/.claude/settings.json", "codex": "/p/.codex/hooks.json",
		"cursor": "/p/.cursor/hooks.json", "gemini": "/p/.gemini/settings.json",
	} {
		got, err := Path(Options{Agent: agent, Scope: ScopeProject, ProjectDir: "/p"})
		if err != nil || got != want {
			t.Errorf("%s: %q %v; want %q", agent, got, err, want)
		}
		got, _ = Path(Options{Agent: agent, Scope: ScopeUser, Home: "/h"})
		if got != strings.Replace(want, "/p/", "/h/", 1) {
			t.Errorf("%s user path %q", agent, got)
		}
	}
}

func TestSymlinkedSettingsWrittenThrough(t *testing.T) {
	o := opts(t, "gemini")
	path := mustPath(t, o)
	real := filepath.Join(t.TempDir(), "dotfiles-settings.json")
	_ = os.WriteFile(real, []byte(userFiles["gemini"]), 0o644)
	_ = os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.Symlink(real, path); err != nil {
		t.Skip("no symlinks here:", err)
	}
	if _, err := Install(o); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the symlink was replaced by a file")
	}
	b, _ := os.ReadFile(real)
	if len(harnEvents(t, b, "gemini")) != len(agentEvents(t, "gemini")) {
		t.Fatalf("target not updated:\n%s", b)
	}
}

func TestHookCommand(t *testing.T) {
	for bin, want := range map[string]string{
		"/usr/local/bin/harn":     "/usr/local/bin/harn hook cursor",
		"/Users/Ana Lee/bin/harn": `"/Users/Ana Lee/bin/harn" hook cursor`,
		`/tmp/we"ird $dir/harn`:   `"/tmp/we\"ird \$dir/harn" hook cursor`,
	} {
		if got := hookCommand(bin, "cursor"); got != want {
			t.Errorf("hookCommand(%q) = %q; want %q", bin, got, want)
		}
		if !isHarn(hookCommand(bin, "cursor"), "cursor") {
			t.Errorf("%q is not recognised as harn's", hookCommand(bin, "cursor"))
		}
	}
	for _, cmd := range []string{"harn hook codex", "~/bin/guard.sh", "/usr/bin/harn hook claude-code --x", "other hook cursor"} {
		if isHarn(cmd, "cursor") {
			t.Errorf("%q taken for harn's cursor hook", cmd)
		}
	}
}

func TestSummary(t *testing.T) {
	r := Report{Path: "/h/.claude/settings.json", Changed: true, Added: []string{"Stop", "SessionEnd"}, Backup: "/h/.claude/settings.json.harn-backup"}
	s := r.Summary()
	for _, want := range []string{r.Path, "add 2: Stop, SessionEnd", "backup: " + r.Backup} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	if s := (Report{Path: "/x", Removed: []string{"stop"}, Changed: true}).Summary(); !strings.Contains(s, "remove 1: stop") {
		t.Errorf("summary: %s", s)
	}
	if s := (Report{Path: "/x"}).Summary(); !strings.Contains(s, "no change") {
		t.Errorf("summary: %s", s)
	}
}

// TestInstallRunsHarnHookAndReplacesHarnsEntries: with Hook set, every
// entry runs harn-hook, a reinstall over entries that ran harn replaces
// them (one entry per event, never two), and the instructions still name
// harn, which runs the commands they quote.
func TestInstallRunsHarnHookAndReplacesHarnsEntries(t *testing.T) {
	const hook = "/opt/harn/bin/harn-hook"
	for _, agent := range Agents() {
		t.Run(agent, func(t *testing.T) {
			o := opts(t, agent)
			if _, err := Install(o); err != nil {
				t.Fatal(err)
			}
			o.Hook = hook
			r, err := Install(o)
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(r.Path)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), bin+" hook ") {
				t.Errorf("an entry still runs harn:\n%s", b)
			}
			for _, ev := range agentEvents(t, agent) {
				if n := strings.Count(string(b), hook+" hook "+agent); n < 1 {
					t.Errorf("no entry runs harn-hook for %s", ev)
				}
			}
			if n := strings.Count(string(b), hook+" hook "+agent); n != len(agentEvents(t, agent)) {
				t.Errorf("%d harn-hook entries for %d events", n, len(agentEvents(t, agent)))
			}
			if p := r.Instructions.Path; p != "" {
				ins, _ := os.ReadFile(p)
				if strings.Contains(string(ins), "harn-hook") {
					t.Errorf("the instructions name harn-hook:\n%s", ins)
				}
			}
			o.Hook = "harn-hook-2"
			if _, err := Install(o); !errors.Is(err, ErrBadCommand) {
				t.Errorf("a relative hook binary: %v, want ErrBadCommand", err)
			}
		})
	}
}
