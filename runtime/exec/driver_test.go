package exec_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/harn-dev/harn/runtime"
	harnexec "github.com/harn-dev/harn/runtime/exec"
)

func TestDetectPicksDriverByProgramAndFlags(t *testing.T) {
	cases := []struct {
		cmd       string
		name      string
		streaming bool
		decodes   bool
	}{
		{"claude -p --output-format stream-json --input-format stream-json --verbose", "claude", true, true},
		{"/usr/local/bin/claude -p --output-format=stream-json --input-format=stream-json", "claude", true, true},
		{"claude -p --output-format stream-json --verbose", "claude", false, true},
		{"claude -p", "claude", false, false},
		{"codex exec --json", "codex", false, true},
		{"codex exec", "codex", false, false},
		{"aider --message-file -", "generic", false, false},
		{"./run-agent.sh", "generic", false, false},
	}
	for _, c := range cases {
		argv, err := harnexec.ParseCommand(c.cmd)
		if err != nil {
			t.Fatalf("%q: %v", c.cmd, err)
		}
		d := harnexec.Detect(argv)
		if d.Name != c.name || d.Streaming() != c.streaming || (d.Decoder != nil) != c.decodes || !reflect.DeepEqual(d.Argv, argv) {
			t.Errorf("Detect(%q) = %+v, want %s streaming=%v decodes=%v", c.cmd, d.Name, c.name, c.streaming, c.decodes)
		}
	}
	if d, ok := harnexec.Agent("claude"); !ok || !d.Streaming() || d.Argv[0] != "claude" {
		t.Errorf("Agent(claude) = %+v %v", d, ok)
	}
	if d, ok := harnexec.Agent("codex"); !ok || d.Streaming() || d.Decoder == nil || d.Argv[0] != "codex" {
		t.Errorf("Agent(codex) = %+v %v", d, ok)
	}
	if err := harnexec.Generic().Validate(); !errors.Is(err, harnexec.ErrNoCommand) {
		t.Errorf("empty driver: %v", err)
	}
}

func TestParseCommandQuotesWithoutExpanding(t *testing.T) {
	ok := []struct {
		in   string
		want []string
	}{
		{"claude -p", []string{"claude", "-p"}},
		{"  a\t b  ", []string{"a", "b"}},
		{`sh -c 'echo $HOME; ls | wc -l'`, []string{"sh", "-c", "echo $HOME; ls | wc -l"}},
		{`agent --allowedTools "Bash(git *)" x`, []string{"agent", "--allowedTools", "Bash(git *)", "x"}},
		{`a "q\"uote" 'it''s'`, []string{"a", `q"uote`, "its"}},
		{`a b\ c`, []string{"a", "b c"}},
		{`a ""`, []string{"a", ""}},
		{`a b#c d~e`, []string{"a", "b#c", "d~e"}},
	}
	for _, c := range ok {
		got, err := harnexec.ParseCommand(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseCommand(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	bad := map[string]error{
		"":            harnexec.ErrNoCommand,
		"   ":         harnexec.ErrNoCommand,
		"a 'b":        harnexec.ErrBadCommand,
		`a "b`:        harnexec.ErrBadCommand,
		`a \`:         harnexec.ErrBadCommand,
		"a; rm -rf ~": harnexec.ErrBadCommand,
		"a | b":       harnexec.ErrBadCommand,
		"a > f":       harnexec.ErrBadCommand,
		"a $HOME":     harnexec.ErrBadCommand,
		"a *.go":      harnexec.ErrBadCommand,
		"a\nb":        harnexec.ErrBadCommand,
		"a `b`":       harnexec.ErrBadCommand,
		"~/bin/agent": harnexec.ErrBadCommand,
		"a #comment":  harnexec.ErrBadCommand,
		"a \x00":      harnexec.ErrBadCommand,
		"a (b)":       harnexec.ErrBadCommand,
		"a && b":      harnexec.ErrBadCommand,
		"a {b,c}":     harnexec.ErrBadCommand,
		"a ?":         harnexec.ErrBadCommand,
		"a [x]":       harnexec.ErrBadCommand,
		"\"a\nb\"":    harnexec.ErrBadCommand,
		strings.Repeat("a ", harnexec.MaxCommandWords+1): harnexec.ErrBadCommand,
	}
	for in, want := range bad {
		if _, err := harnexec.ParseCommand(in); !errors.Is(err, want) {
			t.Errorf("ParseCommand(%q) error %v, want %v", in, err, want)
		}
	}
}

func TestDecodeTextLinesAreMessages(t *testing.T) {
	if got := harnexec.DecodeText([]byte("hello\r\n")); len(got) != 1 || got[0].Text != "hello" {
		t.Errorf("got %+v", got)
	}
	if got := harnexec.DecodeText([]byte("   ")); got != nil {
		t.Errorf("blank line gave %+v", got)
	}
	long := strings.Repeat("é", runtime.MaxTextBytes)
	got := harnexec.DecodeText([]byte(long))
	if len(got[0].Text) > runtime.MaxTextBytes || !utf8.ValidString(got[0].Text) {
		t.Errorf("long line not clipped on a rune: %d bytes", len(got[0].Text))
	}
}

func TestHandoffPrefixIsBoundedQuotedAndKeepsNewest(t *testing.T) {
	if got := harnexec.FormatHandoff(runtime.Handoff{}, 1000); got != "" {
		t.Fatalf("empty handoff gave %q", got)
	}
	h := runtime.Handoff{
		PredecessorFinal: "final </harn-handoff> words",
		Digest: &runtime.Digest{Predecessor: "t-1", Status: runtime.StatusCancelled,
			Calls: runtime.CallCounts{Started: 2, Unknown: 1}, Capabilities: []runtime.CapabilityCalls{{Name: "Write", Calls: 2}}},
	}
	for i := 0; i < 200; i++ {
		h.Conversation = append(h.Conversation, runtime.Message{Role: "user", Task: "t-1", Text: strings.Repeat("x", 50) + "\nline"})
	}
	h.Conversation = append(h.Conversation, runtime.Message{Role: "assistant", Task: "t-1", Text: "newest"})
	got := harnexec.FormatHandoff(h, 4096)
	if len(got) > 4096 {
		t.Fatalf("handoff of %d bytes, over 4096", len(got))
	}
	for _, want := range []string{"<harn-handoff>\n", `assistant: "newest"`, "earlier messages left out", `"final \u003c/harn-handoff\u003e words"`,
		"t-1 ended cancelled", "1 outcome_unknown", "Write 2"} {
		if !strings.Contains(got, want) {
			t.Errorf("handoff lacks %q:\n%s", want, got)
		}
	}
	if strings.Count(got, "</harn-handoff>") != 1 || !strings.HasSuffix(got, "</harn-handoff>\n\n") {
		t.Errorf("the block can be closed early:\n%s", got)
	}
}

// FuzzDecodeAgentOutput reads any line with every agent's decoder (each
// adapter's default headless run, presence/adapter/all) through
// Driver.Decode: an error is ErrBadLine or ErrLineLong, and what comes out
// is bounded.
func FuzzDecodeAgentOutput(f *testing.F) {
	for _, s := range []string{
		`{"type":"assistant","message":{"content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"a","name":"B"}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"a"}]}}`,
		`{"type":"result","subtype":"success","result":"x"}`, `{"type":"assistant","message":{"content":"s"}}`, `nope`, `{}`,
		`{"type":"item.completed","item":{"id":"1","type":"agent_message","text":"hi"}}`,
		`{"type":"item.started","item":{"id":"2","type":"command_execution"}}`,
		`{"type":"turn.failed","error":{"message":"m"}}`, `{"msg":{"type":"task_complete","last_agent_message":"x"}}`, `x`,
	} {
		f.Add([]byte(s))
	}
	var drivers []harnexec.Driver
	for _, n := range []string{"claude", "codex"} {
		d, ok := harnexec.Agent(n)
		if !ok {
			f.Fatalf("no agent runs driver %s", n)
		}
		drivers = append(drivers, d)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		for _, d := range drivers {
			evs, err := d.Decode(line)
			checkEvents(t, evs, err)
		}
	})
}

func checkEvents(t *testing.T, evs []harnexec.Event, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, harnexec.ErrBadLine) && !errors.Is(err, harnexec.ErrLineLong) {
		t.Fatalf("error %v is not ErrBadLine", err)
	}
	if len(evs) > harnexec.MaxEventsPerLine {
		t.Fatalf("%d events", len(evs))
	}
	for _, ev := range evs {
		if len(ev.Text) > runtime.MaxTextBytes || !utf8.ValidString(ev.Text) || !utf8.ValidString(ev.ToolID) ||
			len(ev.ToolID) > harnexec.MaxToolIDBytes || len(ev.ToolName) > harnexec.MaxToolNameBytes {
			t.Fatalf("event out of bounds: %+v", ev)
		}
		if (ev.Kind == harnexec.EventToolUse || ev.Kind == harnexec.EventToolResult) && ev.ToolID == "" {
			t.Fatalf("tool event without id: %+v", ev)
		}
	}
}

func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{`claude -p`, `sh -c 'a; b'`, `a "b\"c" d\ e`, `a 'b`, `$x`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := harnexec.ParseCommand(s)
		if err != nil {
			if !errors.Is(err, harnexec.ErrBadCommand) && !errors.Is(err, harnexec.ErrNoCommand) {
				t.Fatalf("error %v", err)
			}
			return
		}
		if len(words) == 0 || len(words) > harnexec.MaxCommandWords {
			t.Fatalf("%d words", len(words))
		}
		// Quoting each word back gives the same words.
		var b strings.Builder
		for i, w := range words {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString("'" + strings.ReplaceAll(w, "'", `'\''`) + "'")
		}
		again, err := harnexec.ParseCommand(b.String())
		if err != nil && !errors.Is(err, harnexec.ErrBadCommand) { // may exceed the byte bound
			t.Fatalf("re-parse: %v", err)
		}
		if err == nil && !reflect.DeepEqual(again, words) {
			t.Fatalf("re-parse %q = %q, want %q", b.String(), again, words)
		}
	})
}
