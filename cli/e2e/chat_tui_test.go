package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
)

// inputOf is the input's part of the screen: its last lines.
func inputOf(s string) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(ls[max(len(ls)-3, 0):], "\n")
}

// boxOf is the approval box of the screen ("" when none shows).
func boxOf(s string) string {
	i, j := strings.Index(s, "╭"), strings.LastIndex(s, "╰")
	if i < 0 || j < i {
		return ""
	}
	return s[i:j]
}

// A change asked for in the TUI, as a person sees it: the edit's diff and
// then the shell's whole command are on screen before y is typed, the
// output after; the answer is markdown; PgUp scrolls back, Up brings the
// prompt back, a slash command and its hint run as printed.
func TestChatShowsTheShellCommandAndTheDiffBeforeYThenTheOutput(t *testing.T) {
	e := askEnv(t)
	wd := t.TempDir()
	f := filepath.Join(wd, "notes.txt")
	os.WriteFile(f, []byte("alpha\nbeta\ngamma\n"), 0o600)
	m := modeltest.New(t,
		modeltest.Calls(true, modeltest.Call{ID: "call_e1", Name: "edit", Args: `{"path":"notes.txt","old_string":"beta","new_string":"BETA"}`}),
		modeltest.Calls(true, modeltest.Call{ID: "call_s1", Name: "shell", Args: `{"command":"seq 1 40 && echo done-marker"}`}),
		modeltest.Text("## Done\n\nI changed **notes.txt** and counted."))
	g := grantsFile(t, "execute read\nexecute edit confirm\nexecute shell confirm\n")
	p := startChat(t, e.root, "change", wd, append(e.hookEnv(), "HARN_PROVIDER_KEY=k"),
		"chat", "--provider-url", m.URL(), "--model", "test-model", "--grants", g)
	p.waitScreen("the TUI is up", "Enter steer")
	p.typeLine("please change the notes", "Enter")

	s := boxOf(p.waitScreen("the edit waits with its diff", "approve edit?"))
	for _, want := range []string{"file notes.txt", "-beta", "+BETA", " alpha", "agent harn", "waiting "} {
		if !strings.Contains(s, want) {
			t.Fatalf("the edit's approval lacks %q:\n%s", want, s)
		}
	}
	if b, _ := os.ReadFile(f); string(b) != "alpha\nbeta\ngamma\n" {
		t.Fatalf("the file changed before y: %q", b)
	}
	p.keys("y")
	s = p.waitScreen("the shell waits with its command", "approve shell?")
	if b := boxOf(s); !strings.Contains(b, "$ seq 1 40 && echo done-marker") || !strings.Contains(b, "in "+wd) {
		t.Fatalf("the shell's approval lacks its command or cwd:\n%s", s)
	}
	if strings.Contains(s, "done-marker\n") || len(m.Requests()) != 2 {
		t.Fatalf("the shell ran before y (%d requests):\n%s", len(m.Requests()), s)
	}
	p.keys("y")
	s = p.waitScreen("the turn ended", " succeeded ──")
	for _, want := range []string{"● edit notes.txt  ✓", "● shell $ seq 1 40 && echo done-marker  ✓", "│ 8", "… 33 more lines", "Done", "I changed notes.txt and counted."} {
		if !strings.Contains(s, want) {
			t.Fatalf("after the turn the screen lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "**") || strings.Contains(s, "approve ") {
		t.Fatalf("the answer is not markdown, or a box stayed:\n%s", s)
	}
	if b, _ := os.ReadFile(f); string(b) != "alpha\nBETA\ngamma\n" {
		t.Fatalf("the approved edit: %q", b)
	}

	p.keys("C-o")
	p.keys("C-End")
	p.waitScreen("ctrl+o expanded the output", "│ done-marker")
	for range 4 {
		p.keys("PPage")
	}
	s = p.waitScreen("PgUp scrolled back", "scrolled ")
	if !strings.Contains(transcriptOf(s), "❯ please change the notes") {
		t.Fatalf("scrolled back to the prompt:\n%s", s)
	}
	p.keys("Up")
	eventually(t, stateTimeout, "Up brings the prompt back into the input", func() (bool, string) {
		s := p.screen()
		return strings.Contains(inputOf(s), "❯ please change the notes"), s
	})
	p.keys("C-u")
	p.typeLine("/nope", "Enter")
	p.waitScreen("an unknown command names its help", "unknown command /nope: /help lists the commands")
	p.keys("C-u")
	p.typeLine("/help", "Enter")
	p.waitScreen("/help runs as printed", "/profile NAME")
	p.keys("Escape")
	p.waitScreen("the help closed", "Enter steer")
}
