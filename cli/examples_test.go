package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/spf13/cobra"
)

func testRoot() *cobra.Command {
	return hook.NewRoot(strings.NewReader(""), io.Discard, io.Discard)
}

// TestEveryCommandHasExamples: every command's help has an Examples
// section. A new command adds its entry to the examples map.
func TestEveryCommandHasExamples(t *testing.T) {
	root := testRoot()
	n := 0
	hook.WalkCommands(root, func(c *cobra.Command) {
		n++
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%q has no examples: add them to the examples map in cli/examples.go", c.CommandPath())
		}
	})
	if n < 20 {
		t.Fatalf("walked only %d commands", n)
	}
	var help bytes.Buffer
	root.SetOut(&help)
	root.SetArgs([]string{"agents", "list", "--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(help.String(), "Examples:\n  harn agents list") {
		t.Errorf("help has no Examples section:\n%s", help.String())
	}
}

// TestExamplesNameRealCommandsAndFlags: each example line that runs harn
// names a command of the tree and only flags it has, and no entry of the
// map is left without its command.
func TestExamplesNameRealCommandsAndFlags(t *testing.T) {
	root := testRoot()
	paths := map[string]bool{}
	hook.WalkCommands(root, func(c *cobra.Command) { paths[c.CommandPath()] = true })
	for path, text := range examples {
		if !paths[path] {
			t.Errorf("examples has %q, which is not a command", path)
		}
		for _, line := range strings.Split(text, "\n") {
			line, _, _ = strings.Cut(strings.TrimSpace(line), "#")
			for _, part := range strings.Split(line, "|") {
				f := strings.Fields(part)
				if len(f) == 0 || f[0] != "harn" {
					continue
				}
				c, rest, err := root.Find(f[1:])
				if err != nil {
					t.Errorf("%s: %q: %v", path, part, err)
					continue
				}
				for _, a := range rest {
					name, ok := strings.CutPrefix(a, "--")
					if !ok {
						continue
					}
					name, _, _ = strings.Cut(name, "=")
					if c.Flags().Lookup(name) == nil && c.InheritedFlags().Lookup(name) == nil {
						t.Errorf("%s: example %q uses --%s, which %q does not have", path, strings.TrimSpace(part), name, c.CommandPath())
					}
				}
			}
		}
	}
}

// TestTyposGetSuggestions: an unknown command or flag says what was
// probably meant, with the usage exit code.
func TestTyposGetSuggestions(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"agnets"}, `unknown command "agnets" (did you mean "agents"?)`},
		{[]string{"agents", "lsit"}, `(did you mean "list"?)`},
		{[]string{"mesh", "member"}, `(did you mean "members"?)`},
		{[]string{"version", "--jsno"}, `(did you mean "--json"?)`},
		{[]string{"agents", "list", "--al"}, `(did you mean "--all"?)`},
		{[]string{"node", "status", "--data-dri", "x"}, `(did you mean "--data-dir"?)`},
		{[]string{"zzzzzz"}, `unknown command "zzzzzz"; run`},
	}
	for _, c := range cases {
		var stderr bytes.Buffer
		code := Main(c.args, strings.NewReader(""), io.Discard, &stderr)
		if code != hook.ExitUsage || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("harn %v: exit %d, stderr %q; want exit %d and %q", c.args, code, stderr.String(), hook.ExitUsage, c.want)
		}
		if strings.Count(strings.TrimSpace(stderr.String()), "\n") > 0 {
			t.Errorf("harn %v: error is not one line: %q", c.args, stderr.String())
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"json", "json", 0}, {"jsno", "json", 2}, {"al", "all", 1}, {"DATA", "data", 0}, {"", "abc", 3}, {"kitten", "sitting", 3}} {
		if got := hook.EditDistance(c.a, c.b); got != c.d {
			t.Errorf("editDistance(%q, %q) = %d; want %d", c.a, c.b, got, c.d)
		}
	}
}

// TestReadCommandsTakeJSON: version and fold accept --json.
func TestReadCommandsTakeJSON(t *testing.T) {
	var out bytes.Buffer
	if code := Main([]string{"version", "--json"}, strings.NewReader(""), &out, io.Discard); code != 0 {
		t.Fatalf("version --json: exit %d", code)
	}
	var v struct{ Version, Commit string }
	if err := json.Unmarshal(out.Bytes(), &v); err != nil || v.Version == "" || v.Commit == "" {
		t.Fatalf("version --json: %q %v", out.String(), err)
	}
	out.Reset()
	ev := `{"id":"01J0000000000000000000000A","session_id":"s1","type":"session.start","ts":"2026-08-12T10:00:00.000Z","agent":"codex"}` + "\n"
	if code := Main([]string{"agents", "fold", "--json", "-"}, strings.NewReader(ev), &out, io.Discard); code != 0 {
		t.Fatalf("fold --json: exit %d", code)
	}
	if !json.Valid(out.Bytes()) {
		t.Fatalf("fold --json: %q", out.String())
	}
}

// TestSoleRootsAnswerAsTheFullTree: the commands that run under a root of
// their own (soleRoots) print the same help, for themselves and every
// subcommand, and refuse the same typos, as under the full command tree.
func TestSoleRootsAnswerAsTheFullTree(t *testing.T) {
	for name := range soleRoots {
		full := hook.NewRoot(strings.NewReader(""), io.Discard, io.Discard)
		var sole *cobra.Command
		for _, c := range full.Commands() {
			if c.Name() == name {
				sole = c
			}
		}
		if sole == nil {
			t.Fatalf("%s is not a command of the full tree", name)
		}
		paths := [][]string{{name}}
		for _, c := range sole.Commands() {
			paths = append(paths, []string{name, c.Name()})
		}
		// an unknown agent is a hook's diagnostic (exit 0); ask's word is
		// its prompt
		if name != "hook" && name != "ask" {
			paths = append(paths, []string{name, "zzbogus"})
		}
		for _, p := range paths {
			run := func(viaMain bool) (int, string) {
				var out, errb bytes.Buffer
				args := append(append([]string(nil), p...), "--help")
				if p[len(p)-1] == "zzbogus" {
					args = p
				}
				if viaMain {
					return Main(args, strings.NewReader(""), &out, &errb), out.String() + errb.String()
				}
				root := hook.NewRoot(strings.NewReader(""), &out, &errb)
				root.SetArgs(args)
				_, err := root.ExecuteC()
				code := hook.ExitOK
				if err != nil {
					code = hook.ExitCode(err)
					errb.WriteString(err.Error())
				}
				return code, out.String() + errb.String()
			}
			c1, o1 := run(true)
			c2, o2 := run(false)
			if p[len(p)-1] == "zzbogus" {
				if c1 != hook.ExitUsage || !strings.Contains(o1, "unknown command") {
					t.Errorf("harn %v: exit %d, %q", p, c1, o1)
				}
				continue
			}
			if c1 != c2 || o1 != o2 {
				t.Errorf("harn %v --help differs under its own root:\n%s\n--- full tree:\n%s", p, o1, o2)
			}
		}
	}
}
