package tasks

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestDetailShowsTheCallInFull(t *testing.T) {
	for _, c := range []struct{ tool, input, want string }{
		{"Bash", `{"command":"curl -H 'X: y' https://x.example && make release\nVERSION=2"}`, "curl -H 'X: y' https://x.example && make release VERSION=2"},
		{"Edit", `{"file_path":"/src/a.go","old_string":"a\nb","new_string":"a\nb\nc\n"}`, "/src/a.go (+3/−2 lines)"},
		{"Write", `{"file_path":"/src/new.go","content":"package x\n\nfunc f() {}\n"}`, "/src/new.go (+3/−0 lines)"},
		{"MultiEdit", `{"file_path":"/src/m.go","edits":[{"old_string":"x","new_string":"y\nz"},{"old_string":"p\nq","new_string":""}]}`, "/src/m.go (+2/−3 lines)"},
		{"WebFetch", `{"url":"https://example.com","prompt":"read it"}`, `{"prompt":"read it","url":"https://example.com"}`},
		{"Bash", `{"command":"echo \u001b[31mred"}`, "echo [31mred"},
	} {
		if got := Detail(c.tool, []byte(c.input)); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.tool, c.input, got, c.want)
		}
	}
	long := `{"command":"` + strings.Repeat("x", 5000) + `"}`
	if got := Detail("Bash", []byte(long)); utf8.RuneCountInString(got) != MaxDetail {
		t.Errorf("a long command is %d runes, want %d", utf8.RuneCountInString(got), MaxDetail)
	}
}

// TestSessionWideIsRefusedForAnAgentThatCannotTakeIt: the answer is
// refused and the request stays open for a plain answer.
func TestSessionWideIsRefusedForAnAgentThatCannotTakeIt(t *testing.T) {
	a := NewApprovals("n1", nil)
	type res struct {
		ans Answer
		ok  bool
	}
	done := make(chan res, 1)
	go func() {
		_, ans, ok, _ := a.Await(context.Background(), Request{Session: "s1", Agent: "codex", Tool: "Bash"}, time.Minute)
		done <- res{ans, ok}
	}()
	var id string
	for i := 0; i < 1000 && id == ""; i++ {
		if l := a.List(); len(l) == 1 {
			id = l[0].ID
		} else {
			time.Sleep(time.Millisecond)
		}
	}
	if id == "" {
		t.Fatal("the request did not open")
	}
	if _, err := a.AnswerWith(id, true, true, "op", ""); !errors.Is(err, ErrNotSessionWide) {
		t.Fatalf("session-wide on codex: %v, want ErrNotSessionWide", err)
	}
	if _, err := a.AnswerWith(id, true, false, "op", ""); err != nil {
		t.Fatal(err)
	}
	if r := <-done; !r.ok || !r.ans.Allow || r.ans.SessionWide {
		t.Fatalf("the answer: %+v", r)
	}
}
