package remint

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

const name = "[BLOCKED] - Agent Flint - fix rounding"

func claudeLine(role, text string) string {
	if role == "assistant" {
		return `{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":` + q(text) + `}]}}`
	}
	return `{"type":"user","message":{"role":"user","content":` + q(text) + `}}`
}

func q(s string) string {
	b := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
	return `"` + b + `"`
}

// TestShownNameFromTheAssistantOnly: a name counts as shown only when the
// assistant wrote it, in Claude Code's and Codex's transcript shapes;
// harn's reminder in a user or system message never counts, nor does a
// peer's name.
func TestShownNameFromTheAssistantOnly(t *testing.T) {
	cases := []struct {
		name       string
		transcript string
		want       bool
	}{
		{"claude assistant shows it", claudeLine("user", "go") + "\n" + claudeLine("assistant", "Session: **"+name+"**\nDone."), true},
		{"claude reminder in a user message", claudeLine("user", "harn: show this session name: "+name), false},
		{"codex response item", `{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"` + name + `"}]}}`, true},
		{"codex agent_message event", `{"type":"event_msg","payload":{"type":"agent_message","message":"` + name + `"}}`, true},
		{"a peer's name", claudeLine("assistant", "[BLOCKED] - Agent Birch - fix rounding"), false},
		{"an older name", claudeLine("assistant", "Agent Flint - fix rounding"), false},
		{"garbage lines skipped", "not json\n{\"type\":\n" + claudeLine("assistant", name), true},
		{"tool input is not text", `{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","input":{"command":"echo '` + name + `'"}}]}}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := TextShows(AssistantText([]byte(c.transcript)), name); got != c.want {
				t.Fatalf("shows = %v, want %v (texts %q)", got, c.want, AssistantText([]byte(c.transcript)))
			}
		})
	}
}

// TestTranscriptTailOnly: only the last TailBytes are read, from a line
// boundary.
func TestTranscriptTailOnly(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "t.jsonl")
	old := claudeLine("assistant", name) + "\n"
	filler := strings.Repeat(claudeLine("user", strings.Repeat("x", 100))+"\n", 50)
	if err := os.WriteFile(p, []byte(old+filler), 0o600); err != nil {
		t.Fatal(err)
	}
	r := New(Config{TailBytes: int64(len(filler) + 10)})
	if ok, err := r.Shows(p, name); err != nil || ok {
		t.Fatalf("a name before the tail counted: %v %v", ok, err)
	}
	r = New(Config{TailBytes: int64(len(old + filler))})
	if ok, err := r.Shows(p, name); err != nil || !ok {
		t.Fatalf("a name inside the tail: %v %v", ok, err)
	}
}

// TestTranscriptPathUntrusted: relative paths, directories, FIFOs and
// anything under /proc (directly or through a symlink) are refused
// without blocking.
func TestTranscriptPathUntrusted(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink("/proc/self/environ", link); err != nil {
		t.Fatal(err)
	}
	r := New(DefaultConfig())
	for _, p := range []string{"", "rel/t.jsonl", dir, fifo, "/proc/self/environ", link, filepath.Join(dir, "missing")} {
		if ok, err := r.Shows(p, name); ok || !errors.Is(err, ErrRefusedPath) {
			t.Errorf("%q: shows %v, err %v; want ErrRefusedPath", p, ok, err)
		}
	}
}

// FuzzAssistantText: a transcript is outside input; reading it never
// panics.
func FuzzAssistantText(f *testing.F) {
	f.Add([]byte(claudeLine("assistant", name)))
	f.Add([]byte(`{"role":"assistant","text":[[[[{"message":"Agent A - b"}]]]]}`))
	f.Add([]byte("{\n}\n{"))
	f.Fuzz(func(t *testing.T, b []byte) {
		TextShows(AssistantText(b), name)
	})
}
