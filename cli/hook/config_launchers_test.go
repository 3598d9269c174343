package hook

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/harn-dev/harn/node/tasks/taskwire"
)

func TestConfigLaunchersSectionDefinesFixedArgv(t *testing.T) {
	c, err := ParseConfigFile([]byte(`# a node
name = n1
remote-control = laptop
[launchers]
claude = ["claude", "-p", "--output-format", "stream-json"]
# a comment inside the section
codex  = ["codex", "exec", "a, b; $(not a shell)"]
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.vals["name"] != "n1" || c.vals["remote-control"] != "laptop" {
		t.Fatalf("top-level keys: %v", c.vals)
	}
	if _, leaked := c.vals["claude"]; leaked {
		t.Fatal("a launcher became a flag value")
	}
	if !slices.Equal(c.launchers["claude"], []string{"claude", "-p", "--output-format", "stream-json"}) ||
		!slices.Equal(c.launchers["codex"], []string{"codex", "exec", "a, b; $(not a shell)"}) || len(c.launchers) != 2 {
		t.Fatalf("launchers: %v", c.launchers)
	}
}

func TestConfigLaunchersJSONForm(t *testing.T) {
	c, err := ParseConfigFile([]byte(`{"name":"n1","launchers":{"claude":["claude","-p"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.vals["name"] != "n1" || !slices.Equal(c.launchers["claude"], []string{"claude", "-p"}) {
		t.Fatalf("parsed %+v", c)
	}
	if _, leaked := c.vals["launchers"]; leaked {
		t.Fatal("the launchers object became a flag value")
	}
}

func TestConfigLaunchersRefusesBadDefinitions(t *testing.T) {
	for _, s := range []string{
		"[launchers]\nclaude = claude -p\n",       // not an array
		"[launchers]\nclaude = []\n",              // empty argv
		"[launchers]\nclaude = [\"\"]\n",          // empty program
		"[launchers]\nclaude = [\"a\", 1]\n",      // not strings
		"[launchers]\nbad name = [\"a\"]\n",       // bad name
		"[launchers]\n-x = [\"a\"]\n",             // bad first character
		"[launchers]\na = [\"x\"]\na = [\"y\"]\n", // twice
		"[launchers]\na = [\"x\\ny\"]\n",          // a line break in a word
		"[launchers]\nnovalue\n",                  // no =
		"[launchers]\n[launchers]\n",              // two sections
		"[other]\nx = 1\n",                        // unknown section
		"[launchers\nx = [\"a\"]\n",               // unclosed
		`{"launchers":["claude"]}`,                // JSON: not an object
		`{"launchers":{"claude":"claude -p"}}`,    // JSON: not an array
		`{"launchers":{"a b":["x"]}}`,             // JSON: bad name
	} {
		if _, err := ParseConfigFile([]byte(s)); err == nil {
			t.Errorf("%q parsed", s)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: a multi-line error %q", s, err)
		}
	}
	_, err := ParseConfigFile([]byte("[launchers]\nclaude = []\n"))
	if !errors.Is(err, taskwire.ErrBadLauncher) {
		t.Fatalf("not ErrBadLauncher: %v", err)
	}
}

func TestLauncherFlagSplitsWordsAsAShellWithoutOne(t *testing.T) {
	name, argv, err := taskwire.ParseLauncherFlag(`fake=/bin/agent -p "two words" 'a;b' '$HOME'`)
	if err != nil {
		t.Fatal(err)
	}
	if name != "fake" || !slices.Equal(argv, []string{"/bin/agent", "-p", "two words", "a;b", "$HOME"}) {
		t.Fatalf("%s %q", name, argv)
	}
	for _, s := range []string{"fake", "=x", "fake=", "fake=a | b", "b@d=x"} {
		if _, _, err := taskwire.ParseLauncherFlag(s); !errors.Is(err, taskwire.ErrBadLauncher) {
			t.Errorf("%q: %v", s, err)
		}
	}
}

func TestRemoteExecNamesOnlyDefinedLaunchers(t *testing.T) {
	l := taskwire.Launchers{"claude": {"claude"}, "codex": {"codex"}}
	for _, s := range []string{"", "none", " none "} {
		if got, err := taskwire.ParseRemoteExec(s, l); err != nil || got != nil {
			t.Fatalf("%q: %v %v (the default is none)", s, got, err)
		}
	}
	got, err := taskwire.ParseRemoteExec("codex, claude,codex", l)
	if err != nil || !slices.Equal(got, []string{"claude", "codex"}) {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := taskwire.ParseRemoteExec("claude,gemini", l); !errors.Is(err, taskwire.ErrBadLauncher) || !strings.Contains(err.Error(), "gemini") {
		t.Fatalf("an undefined launcher: %v", err)
	}
}
