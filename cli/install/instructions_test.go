package install

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func instrOpts(t *testing.T, agent, scope string) Options {
	t.Helper()
	return Options{Agent: agent, Scope: scope, Home: filepath.Join(t.TempDir(), "home"), ProjectDir: t.TempDir(),
		Command: "/usr/local/bin/harn"}
}

func TestInstructionsPaths(t *testing.T) {
	env := map[string]string{"CLAUDE_CONFIG_DIR": "/cfg/claude", "CODEX_HOME": "/cfg/codex"}
	for _, tc := range []struct{ agent, scope, env, want string }{
		{"claude-code", ScopeUser, "", "/h/.claude/CLAUDE.md"},
		{"claude-code", ScopeUser, "y", "/cfg/claude/CLAUDE.md"},
		{"claude-code", ScopeProject, "y", "/p/CLAUDE.md"},
		{"codex", ScopeUser, "", "/h/.codex/AGENTS.md"},
		{"codex", ScopeUser, "y", "/cfg/codex/AGENTS.md"},
		{"codex", ScopeProject, "", "/p/AGENTS.md"},
		{"cursor", ScopeUser, "", "/h/.cursor/rules/harn.mdc"},
		{"cursor", ScopeProject, "", "/p/.cursor/rules/harn.mdc"},
		{"gemini", ScopeUser, "", "/h/.gemini/GEMINI.md"},
		{"gemini", ScopeProject, "", "/p/GEMINI.md"},
	} {
		o := Options{Agent: tc.agent, Scope: tc.scope, Home: "/h", ProjectDir: "/p"}
		if tc.env != "" {
			o.Getenv = func(k string) string { return env[k] }
		}
		got, err := InstructionsPath(o)
		if err != nil || got != tc.want {
			t.Errorf("%s %s env=%q: %q %v, want %q", tc.agent, tc.scope, tc.env, got, err, tc.want)
		}
	}
	if _, err := InstructionsPath(Options{Agent: "vim", Scope: ScopeUser, Home: "/h"}); !errors.Is(err, ErrUnknownAgent) {
		t.Errorf("unknown agent: %v", err)
	}
}

// TestInstructionsKeepTheUsersText: install adds harn's region after the
// user's text, a second install changes nothing, uninstall gives back the
// user's bytes exactly.
func TestInstructionsKeepTheUsersText(t *testing.T) {
	for _, agent := range Agents() {
		o := instrOpts(t, agent, ScopeProject)
		path, _ := InstructionsPath(o)
		user := []byte("# My rules\n\nAlways run `make lint`.\n")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, user, 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := InstallInstructions(o)
		if err != nil || !r.Changed {
			t.Fatalf("%s: install: %+v %v", agent, r, err)
		}
		b, _ := os.ReadFile(path)
		if !bytes.HasPrefix(b, user) || !strings.Contains(string(b), RegionFor(o.Command)) {
			t.Fatalf("%s: file after install:\n%s", agent, b)
		}
		if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode changed to %v", agent, fi.Mode())
		}
		if r, err := InstallInstructions(o); err != nil || r.Changed {
			t.Fatalf("%s: second install changed the file: %+v %v", agent, r, err)
		}
		st, err := InspectInstructions(o)
		if err != nil || !st.Present || !st.Current || st.Version != InstructionsVersion {
			t.Fatalf("%s: inspect: %+v %v", agent, st, err)
		}
		if _, err := UninstallInstructions(o); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(path); !bytes.Equal(b, user) {
			t.Fatalf("%s: uninstall did not give back the user's text:\n%q", agent, b)
		}
	}
}

// TestInstructionsFileOfHarnAloneIsRemoved: a file harn created is removed
// by uninstall (Cursor's rule file with its front matter too).
func TestInstructionsFileOfHarnAloneIsRemoved(t *testing.T) {
	for _, agent := range Agents() {
		o := instrOpts(t, agent, ScopeUser)
		r, err := InstallInstructions(o)
		if err != nil || !r.Changed {
			t.Fatal(agent, r, err)
		}
		if agent == "cursor" && !bytes.HasPrefix(r.After, []byte("---\n")) {
			t.Errorf("cursor rule without front matter:\n%s", r.After)
		}
		u, err := UninstallInstructions(o)
		if err != nil || !u.Removed {
			t.Fatalf("%s: %+v %v", agent, u, err)
		}
		if _, err := os.Stat(r.Path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %s still there", agent, r.Path)
		}
	}
}

// TestInstructionsDriftIsReported: an old version or an edited region is
// not current; a new install replaces it in place.
func TestInstructionsDriftIsReported(t *testing.T) {
	o := instrOpts(t, "claude-code", ScopeProject)
	path, _ := InstructionsPath(o)
	old := "top\n<!-- harn:begin v0 -->\nold words\n<!-- harn:end -->\nbottom\n"
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := InspectInstructions(o)
	if err != nil || !st.Present || st.Current || st.Version != 0 {
		t.Fatalf("old region: %+v %v", st, err)
	}
	if _, err := InstallInstructions(o); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if want := "top\n" + RegionFor(o.Command) + "bottom\n"; string(b) != want {
		t.Fatalf("replaced in place: got\n%s\nwant\n%s", b, want)
	}
	edited := strings.Replace(string(b), "declare it", "DECLARE IT", 1)
	os.WriteFile(path, []byte(edited), 0o644)
	if st, _ := InspectInstructions(o); !st.Present || st.Current {
		t.Fatalf("edited region counted as current: %+v", st)
	}
}

func TestInstructionsBrokenRegionRefused(t *testing.T) {
	o := instrOpts(t, "gemini", ScopeProject)
	path, _ := InstructionsPath(o)
	os.WriteFile(path, []byte("mine\n<!-- harn:begin v1 -->\nno end\n"), 0o644)
	if _, err := InstallInstructions(o); !errors.Is(err, ErrBadRegion) {
		t.Fatalf("want ErrBadRegion, got %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "mine\n<!-- harn:begin v1 -->\nno end\n" {
		t.Fatal("a refused file was changed")
	}
}

func TestInstructionsDryRunWritesNothing(t *testing.T) {
	o := instrOpts(t, "codex", ScopeUser)
	o.DryRun = true
	r, err := InstallInstructions(o)
	if err != nil || !r.Changed {
		t.Fatal(r, err)
	}
	if _, err := os.Stat(r.Path); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("dry run wrote the file")
	}
	d := Diff(r.Path, r.Before, r.After)
	if !strings.Contains(d, "+<!-- harn:begin v1 -->") || !strings.Contains(d, "--- "+r.Path) {
		t.Fatalf("diff:\n%s", d)
	}
}

// FuzzInstructionRegion: any file content either is refused or survives
// install+uninstall byte for byte (when it held no region and was not
// blank), and install is idempotent.
func FuzzInstructionRegion(f *testing.F) {
	f.Add([]byte("# mine\n"))
	f.Add([]byte("<!-- harn:begin v1 -->\nx\n<!-- harn:end -->"))
	f.Add([]byte("a<!-- harn:end --><!-- harn:begin v"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := withRegion(b, "")
		if err != nil {
			if !errors.Is(err, ErrBadRegion) {
				t.Fatal(err)
			}
			return
		}
		again, err := withRegion(in, "")
		if err != nil || !bytes.Equal(again, in) {
			t.Fatalf("not idempotent: %q -> %q (%v)", in, again, err)
		}
		out, found, err := withoutRegion(in, "")
		if err != nil || !found {
			t.Fatalf("region lost: %v", err)
		}
		if _, ok, _ := findRegion(b); !ok && len(bytes.TrimSpace(b)) > 0 && !bytes.Equal(out, b) &&
			!bytes.Equal(append(bytes.Clone(b), '\n'), out) {
			t.Fatalf("user text changed: %q -> %q", b, out)
		}
	})
}

// TestInstructionsNameTheBinaryTheHooksRun: when `harn` on PATH is not
// the hooks' binary (Options.Command is an absolute path), every command
// in the region names that path, quoted for a shell where it needs it;
// when it is (Command "harn"), the region says a bare `harn`. Both count
// as current, and the doctor's inspection (which knows no Command) too.
func TestInstructionsNameTheBinaryTheHooksRun(t *testing.T) {
	for _, tc := range []struct{ bin, word string }{
		{"/opt/harn tools/bin/harn", `"/opt/harn tools/bin/harn"`},
		{"/usr/local/bin/harn", "/usr/local/bin/harn"},
		{BareCommand, BareCommand},
	} {
		o := instrOpts(t, "claude-code", ScopeProject)
		o.Command = tc.bin
		if _, err := InstallInstructions(o); err != nil {
			t.Fatal(err)
		}
		path, _ := InstructionsPath(o)
		b, _ := os.ReadFile(path)
		got := string(b)
		for _, cmd := range []string{" agents set-task ", " agents lifecycle blocked ", " agents lifecycle active`", " agents lifecycle done`", " agents release-claim "} {
			if !strings.Contains(got, "`"+tc.word+cmd) {
				t.Errorf("%s: the region lacks `%s%s:\n%s", tc.bin, tc.word, cmd, got)
			}
		}
		if tc.bin != BareCommand && strings.Contains(got, "`harn ") {
			t.Errorf("%s: the region still tells the agent to run a bare harn:\n%s", tc.bin, got)
		}
		for _, cmd := range []string{tc.bin, ""} {
			o.Command = cmd
			if st, err := InspectInstructions(o); err != nil || !st.Present || !st.Current {
				t.Errorf("%s: inspect with Command %q: %+v %v", tc.bin, cmd, st, err)
			}
		}
	}
}
