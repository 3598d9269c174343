package install

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUserScopeHonoursConfigDirVariables: CLAUDE_CONFIG_DIR and CODEX_HOME
// move the user scope's settings file; the project scope ignores them.
func TestUserScopeHonoursConfigDirVariables(t *testing.T) {
	env := map[string]string{"CLAUDE_CONFIG_DIR": "/cfg/claude", "CODEX_HOME": "/cfg/codex/"}
	getenv := func(k string) string { return env[k] }
	for _, c := range []struct {
		agent, scope string
		getenv       func(string) string
		want         string
	}{
		{"claude-code", ScopeUser, getenv, "/cfg/claude/settings.json"},
		{"codex", ScopeUser, getenv, "/cfg/codex/hooks.json"},
		{"gemini", ScopeUser, getenv, "/h/.gemini/settings.json"},
		{"cursor", ScopeUser, getenv, "/h/.cursor/hooks.json"},
		{"claude-code", ScopeUser, nil, "/h/.claude/settings.json"},
		{"codex", ScopeUser, func(string) string { return "" }, "/h/.codex/hooks.json"},
		{"claude-code", ScopeProject, getenv, "/p/.claude/settings.json"},
		{"codex", ScopeProject, getenv, "/p/.codex/hooks.json"},
	} {
		got, err := Path(Options{Agent: c.agent, Scope: c.scope, Home: "/h", ProjectDir: "/p", Getenv: c.getenv})
		if err != nil || got != c.want {
			t.Errorf("%s %s: %q %v; want %q", c.agent, c.scope, got, err, c.want)
		}
	}
}

// TestBareHarnCommand: "harn" is accepted as the command (the CLI passes
// it when harn on PATH is the installing binary) and is recognised as
// harn's entry on uninstall.
func TestBareHarnCommand(t *testing.T) {
	o := opts(t, "cursor")
	o.Command = BareCommand
	r, err := Install(o)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(r.After), `"command": "harn hook cursor"`) {
		t.Fatalf("command not bare:\n%s", r.After)
	}
	u, err := Uninstall(o)
	if err != nil || len(u.Removed) != len(agentEvents(t, "cursor")) {
		t.Fatalf("uninstall: %+v %v", u, err)
	}
}

const geminiJSONC = `// Gemini CLI settings
{
  /* editor */
  "general": {"vimMode": true}, // keep vim
  "hooksConfig": {"enabled": true},
  "url": "http://example.com/a//b", // a string with slashes stays
  "hooks": {
    // my audit hook
    "BeforeTool": [{"matcher": "run_shell_command", "hooks": [{"name": "audit", "type": "command", "command": "audit.sh", "timeout": 3000}]}]
  }
}
`

// TestGeminiSettingsWithComments: comments outside "hooks" are kept byte
// for byte; comments inside "hooks" are named before anything is written,
// and the file is left alone unless Yes.
func TestGeminiSettingsWithComments(t *testing.T) {
	t.Run("comments outside hooks are kept", func(t *testing.T) {
		o := opts(t, "gemini")
		path := mustPath(t, o)
		src := strings.Replace(geminiJSONC, "    // my audit hook\n", "", 1)
		writeFile(t, path, src)
		r, err := Install(o)
		if err != nil {
			t.Fatal(err)
		}
		after := readFile(t, path)
		for _, keep := range []string{"// Gemini CLI settings\n{", "/* editor */", `"general": {"vimMode": true}, // keep vim`, `"http://example.com/a//b", // a string with slashes stays`, `"command": "audit.sh"`} {
			if !strings.Contains(after, keep) {
				t.Errorf("lost %q:\n%s", keep, after)
			}
		}
		if len(r.LostComments) != 0 || len(harnEvents(t, stripped(t, after), "gemini")) != len(agentEvents(t, "gemini")) {
			t.Fatalf("report %+v\n%s", r, after)
		}
		if readFile(t, path+BackupSuffix) != src {
			t.Error("backup is not the original")
		}
		// Idempotent, and uninstall gives the user's hooks back with the comments.
		if r2, err := Install(o); err != nil || r2.Changed {
			t.Fatalf("second install: %+v %v", r2, err)
		}
		if _, err := Uninstall(o); err != nil {
			t.Fatal(err)
		}
		back := readFile(t, path)
		if strings.Contains(back, "harn") || !strings.Contains(back, "/* editor */") || !strings.Contains(back, `"command": "audit.sh"`) {
			t.Fatalf("uninstall:\n%s", back)
		}
	})
	t.Run("a comment inside hooks is refused before writing", func(t *testing.T) {
		o := opts(t, "gemini")
		path := mustPath(t, o)
		writeFile(t, path, geminiJSONC)
		r, err := Install(o)
		if !errors.Is(err, ErrCommentsLost) || !strings.Contains(err.Error(), "line 8") || !strings.Contains(err.Error(), "--yes") {
			t.Fatalf("error %v; want ErrCommentsLost naming line 8 and --yes", err)
		}
		if readFile(t, path) != geminiJSONC || len(r.LostComments) != 1 {
			t.Fatalf("file touched or report wrong: %+v", r)
		}
		if _, err := os.Stat(path + BackupSuffix); !errors.Is(err, os.ErrNotExist) {
			t.Fatal("a refused install wrote a backup")
		}
		// A dry run says so without failing.
		o.DryRun = true
		r, err = Install(o)
		if err != nil || !strings.Contains(r.Summary(), "would drop the comments on line 8") {
			t.Fatalf("dry run: %v\n%s", err, r.Summary())
		}
		// --yes writes, keeping every other comment, and says what went.
		o.DryRun, o.Yes = false, true
		r, err = Install(o)
		if err != nil || !strings.Contains(r.Summary(), "drop the comments on line 8") {
			t.Fatalf("yes: %v\n%s", err, r.Summary())
		}
		after := readFile(t, path)
		if strings.Contains(after, "my audit hook") || !strings.Contains(after, "// keep vim") {
			t.Fatalf("after --yes:\n%s", after)
		}
	})
	t.Run("no hooks yet: inserted after the last member", func(t *testing.T) {
		for _, src := range []string{
			"{\n  // theme\n  \"ui\": {\"theme\": \"dark\"} // dark\n}\n",
			"// empty\n{ /* nothing */ }",
		} {
			o := opts(t, "gemini")
			path := mustPath(t, o)
			writeFile(t, path, src)
			if _, err := Install(o); err != nil {
				t.Fatalf("%q: %v", src, err)
			}
			after := readFile(t, path)
			if len(harnEvents(t, stripped(t, after), "gemini")) != len(agentEvents(t, "gemini")) {
				t.Fatalf("%q: hooks missing:\n%s", src, after)
			}
			for _, c := range []string{"// theme", "// dark", "// empty", "/* nothing */"} {
				if strings.Contains(src, c) && !strings.Contains(after, c) {
					t.Errorf("lost %q:\n%s", c, after)
				}
			}
		}
	})
	t.Run("unterminated comment is refused", func(t *testing.T) {
		o := opts(t, "gemini")
		path := mustPath(t, o)
		writeFile(t, path, "{ /* oops \n}")
		if _, err := Install(o); !errors.Is(err, ErrBadSettings) {
			t.Fatalf("error %v; want ErrBadSettings", err)
		}
	})
}

func stripped(t *testing.T, s string) []byte {
	t.Helper()
	b, _, err := stripComments([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// FuzzStripComments: blanking comments never changes the length or the
// line structure, and never panics.
func FuzzStripComments(f *testing.F) {
	for _, s := range []string{geminiJSONC, `{"a":"//"}`, `/* x */{}`, `{"a":"\"//"}// c`, "/*", `"unterminated`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, spans, err := stripComments(b)
		if err != nil {
			return
		}
		if len(out) != len(b) || strings.Count(string(out), "\n") != strings.Count(string(b), "\n") {
			t.Fatalf("length or lines changed: %q -> %q", b, out)
		}
		for _, s := range spans {
			if s.start < 0 || s.end > len(b) || s.start >= s.end {
				t.Fatalf("bad span %+v for %d bytes", s, len(b))
			}
		}
	})
}

// TestInspectFindsHarnEntries: Inspect names each harn entry with its
// place and reports the events that lack one, without writing.
func TestInspectFindsHarnEntries(t *testing.T) {
	for _, agent := range Agents() {
		t.Run(agent, func(t *testing.T) {
			o := opts(t, agent)
			st, err := Inspect(o)
			if err != nil || st.FileExists || st.DirExists || len(st.Missing) != len(agentEvents(t, agent)) {
				t.Fatalf("before install: %+v %v", st, err)
			}
			path := mustPath(t, o)
			writeFile(t, path, userFiles[agent])
			if _, err := Install(o); err != nil {
				t.Fatal(err)
			}
			before := readFile(t, path)
			st, err = Inspect(o)
			if err != nil || !st.FileExists || !st.DirExists || len(st.Missing) != 0 || len(st.Hooks) != len(agentEvents(t, agent)) {
				t.Fatalf("after install: %+v %v", st, err)
			}
			for _, h := range st.Hooks {
				if CommandBinary(h.Command) != bin {
					t.Errorf("%+v: binary %q", h, CommandBinary(h.Command))
				}
			}
			if readFile(t, path) != before {
				t.Fatal("Inspect wrote")
			}
		})
	}
}

func TestCommandBinary(t *testing.T) {
	for _, b := range []string{"/usr/local/bin/harn", "/Users/Ana Lee/bin/harn", `/tmp/we"ird $dir/harn`, "harn"} {
		if got := CommandBinary(hookCommand(b, "codex")); got != b {
			t.Errorf("CommandBinary(hookCommand(%q)) = %q", b, got)
		}
	}
}
