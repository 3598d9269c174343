package all_test

import (
	"slices"
	"testing"

	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/presence/adapter/all"
)

// TestHostedAgentsSayHowTheyRunInATerminal: every agent a node hosts
// names its binary, an interrupt key and the key that sends a message,
// and builds its argv with the prompt where the agent takes it.
func TestHostedAgentsSayHowTheyRunInATerminal(t *testing.T) {
	want := []string{"claude-code", "codex", "cursor", "gemini"}
	if got := all.Hostable(); !slices.Equal(got, want) {
		t.Fatalf("hostable agents %v, want %v", got, want)
	}
	for _, n := range all.Hostable() {
		s, _ := all.Host(n)
		if s.Binary == "" || len(s.Interrupt) == 0 || len(s.Submit) == 0 {
			t.Errorf("%s: host spec lacks its binary, interrupt or submit key: %+v", n, s)
		}
		if argv := s.Args(""); !slices.Equal(argv, []string{s.Binary}) {
			t.Errorf("%s: argv without a prompt %q", n, argv)
		}
		argv := s.Args("fix the build")
		if argv[len(argv)-1] != "fix the build" {
			t.Errorf("%s: the prompt is not its argv's last word: %q", n, argv)
		}
	}
	for n, first := range map[string][]string{"claude-code": {"claude", "fix"}, "codex": {"codex", "fix"}, "gemini": {"gemini", "-i", "fix"}, "cursor": {"cursor-agent", "fix"}} {
		s, _ := all.Host(n)
		if got := s.Args("fix"); !slices.Equal(got, first) {
			t.Errorf("%s: argv %q, want %q", n, got, first)
		}
	}
	if s, _ := all.Host("claude-code"); !slices.Equal(s.Interrupt, adapter.Escape) || !slices.Equal(s.Submit, []byte{'\r'}) {
		t.Errorf("claude-code interrupts with %q and submits with %q", s.Interrupt, s.Submit)
	}
}

// TestAPromptThatLooksLikeAFlagIsNeverReadAsOne: a positional prompt
// that starts with a dash comes after "--".
func TestAPromptThatLooksLikeAFlagIsNeverReadAsOne(t *testing.T) {
	s, _ := all.Host("claude-code")
	if got := s.Args("--dangerously-skip-permissions"); !slices.Equal(got, []string{"claude", "--", "--dangerously-skip-permissions"}) {
		t.Fatalf("argv %q", got)
	}
}
