package context

import (
	stdctx "context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harn-dev/harn/runtime/agent"
	"github.com/harn-dev/harn/runtime/agent/tools"
	"github.com/harn-dev/harn/util/clock"
)

func user(task, s string) agent.Message {
	return agent.Message{Role: agent.RoleUser, Text: s, Task: task}
}

func call(task, id, name, args string) agent.Message {
	return agent.Message{Role: agent.RoleAssistant, Task: task, Calls: []agent.ToolCall{{ID: id, Name: name, Args: json.RawMessage(args)}}}
}

func result(task, id, s string) agent.Message {
	return agent.Message{Role: agent.RoleTool, CallID: id, Text: s, Task: task}
}

func viewTokens(ms []agent.Message) int {
	n := 0
	for _, m := range ms {
		n += agent.MessageTokens(m)
	}
	return n
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func filler(n int, seed int) string {
	words := []string{"alpha", "build", "commit", "delta", "error", "file", "go", "harn", "index", "json", "kill", "lane"}
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString(words[(i*7+seed)%len(words)])
		b.WriteString(fmt.Sprintf("%d ", (i+seed)%97))
	}
	return b.String()[:n]
}

func TestHistoryKeepsEverythingAndRecallIsExact(t *testing.T) {
	st := openPebble(t, "")
	sp := NewSpace(st, Options{PreviewBytes: 1024})
	l, err := sp.Open("s1", "")
	if err != nil {
		t.Fatal(err)
	}
	big := filler(300_000, 3) + "é" // a multi-byte rune at the end
	if err := l.Append(user("t1", "go"), call("t1", "c1", "read", `{"path":"a"}`), result("t1", "c1", big)); err != nil {
		t.Fatal(err)
	}
	h := l.History()
	if len(h) != 3 {
		t.Fatalf("history has %d messages, want 3", len(h))
	}
	pv := h[2].Text
	if len(pv) > 1024+256 || !strings.Contains(pv, `"ref":"out-3"`) {
		t.Fatalf("preview is %d bytes or lacks its reference: %q", len(pv), pv[:200])
	}
	got, size, err := l.Recall("out-3", 0, -1)
	if err != nil || size != len(big) || string(got) != big {
		t.Fatalf("recall: %d bytes of %d, err %v", len(got), size, err)
	}
	part, _, err := l.Recall("out-3", 70_000, 100)
	if err != nil || string(part) != big[70_000:70_100] {
		t.Fatalf("recall range across chunks: %q, %v", part, err)
	}
	if _, _, err := l.Recall("out-3", len(big)-1, 5); !errors.Is(err, ErrBadRange) {
		t.Fatalf("range past the end: %v, want ErrBadRange", err)
	}
	for _, ref := range []string{"out-2", "out-99", "nope", ""} {
		if _, _, err := l.Recall(ref, 0, -1); !errors.Is(err, ErrNoRef) {
			t.Fatalf("recall %q: %v, want ErrNoRef", ref, err)
		}
	}
	// another session's context cannot recall this one's output
	o, _ := sp.Open("s2", "")
	if _, _, err := o.Recall("out-3", 0, -1); !errors.Is(err, ErrNoRef) {
		t.Fatalf("cross-session recall: %v, want ErrNoRef", err)
	}
}

func TestRecallTool(t *testing.T) {
	sp := NewSpace(openPebble(t, ""), Options{PreviewBytes: 512})
	l, _ := sp.Open("s1", "")
	out := filler(5000, 1)
	_ = l.Append(user("t1", "go"), call("t1", "c1", "shell", `{}`), result("t1", "c1", out))
	b := sp.Recall()
	if b.Spec.Name != RecallTool || b.Spec.Hash == "" {
		t.Fatalf("recall's spec: %+v", b.Spec)
	}
	short, _ := sp.Open("s3", "")
	_ = short.Append(user("t1", "go"), call("t1", "c1", "shell", `{}`), result("t1", "c1", "ok"))
	if !b.Show("s1", "t1") || b.Show("s3", "t1") || b.Show("nobody", "t1") {
		t.Fatal("recall is listed only where an output was cut to its preview")
	}
	r, err := b.Run(stdctx.Background(), toolsCall("s1", `{"ref":"out-3","offset":100,"length":200}`))
	if err != nil || r.Content[:200] != out[100:300] {
		t.Fatalf("recall tool: %v %q", err, r.Content)
	}
	r, err = b.Run(stdctx.Background(), toolsCall("s1", `{"ref":"out-3"}`))
	lim := RecallLimit(512, len(out))
	if err != nil || !strings.HasPrefix(r.Content, out[:lim]) || len(r.Content) > 512 || !strings.Contains(r.Content, fmt.Sprintf("offset %d", lim)) {
		t.Fatalf("recall without a range is bounded and says what is left: %v %q", err, r.Content)
	}
	if r, err := b.Run(stdctx.Background(), toolsCall("s2", `{"ref":"out-3"}`)); err == nil || !r.IsError {
		t.Fatal("recall in a session without a context succeeded")
	}
}

func TestRestartRebuildsTheProviderViewByteForByte(t *testing.T) {
	dir := t.TempDir()
	st := openPebble(t, filepath.Join(dir, "db"))
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "AGENTS.md"), []byte("Run gofmt."), 0o600); err != nil {
		t.Fatal(err)
	}
	sp := NewSpace(st, Options{PreviewBytes: 1024})
	l, _ := sp.Open("s1", work)
	for i := 0; i < 40; i++ {
		task := fmt.Sprintf("t%d", i/10)
		if i%10 == 0 {
			_ = l.Append(user(task, "task "+task))
		}
		id := fmt.Sprintf("c%d", i)
		_ = l.Append(call(task, id, "read", `{"path":"f"}`), result(task, id, filler(300+i*97, i)))
		if _, err := l.WorkingSet(stdctx.Background(), task, 1500); err != nil {
			t.Fatal(err)
		}
	}
	before := mustJSON(t, l.ProviderView())
	rep := l.Report()
	if len(rep.Checkpoints) == 0 {
		t.Fatal("no checkpoint after 40 exchanges over a 1500-token budget")
	}
	if err := st.close(); err != nil {
		t.Fatal(err)
	}
	st2 := openPebble(t, filepath.Join(dir, "db"))
	l2, err := NewSpace(st2, Options{PreviewBytes: 1024}).Lookup("s1")
	if err != nil {
		t.Fatal(err)
	}
	if after := mustJSON(t, l2.ProviderView()); after != before {
		t.Fatalf("provider view changed across a restart:\nbefore %s\nafter  %s", before, after)
	}
	if !strings.Contains(before, "Run gofmt.") {
		t.Fatal("the instructions are not in the view after checkpoints")
	}
	if got, want := mustJSON(t, l2.Report()), mustJSON(t, rep); got != want {
		t.Fatalf("report changed across a restart")
	}
}

func TestInstructionsRereadAtTaskStart(t *testing.T) {
	work := t.TempDir()
	write := func(name, s string) {
		p := filepath.Join(work, name)
		_ = os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("AGENTS.md", "one")
	sp := NewSpace(openPebble(t, ""), Options{})
	l, _ := sp.Open("s1", work)
	_ = l.Append(user("t1", "a"))
	write("AGENTS.md", "two")
	write(".harn/instructions", "three")
	_ = l.Append(user("t1", "steer, same task"))
	if v := mustJSON(t, l.ProviderView()); !strings.Contains(v, "one") || strings.Contains(v, "two") {
		t.Fatalf("instructions changed within a task: %s", v)
	}
	_ = l.Append(user("t2", "b"))
	v := l.ProviderView()
	if !strings.Contains(v[0].Text, "two") || !strings.Contains(v[0].Text, "three") {
		t.Fatalf("instructions not re-read at task start: %q", v[0].Text)
	}
}

func TestRecoverKeepsTheCurrentTurn(t *testing.T) {
	sp := NewSpace(openPebble(t, ""), Options{})
	l, _ := sp.Open("s1", "")
	_ = l.Append(user("t1", "first"), call("t1", "c1", "read", `{}`), result("t1", "c1", filler(2000, 1)), agent.Message{Role: agent.RoleAssistant, Text: "done", Task: "t1"})
	_ = l.Append(user("t2", "second"), call("t2", "c2", "read", `{}`), result("t2", "c2", "small"))
	if _, err := l.WorkingSet(stdctx.Background(), "t2", 100_000); err != nil {
		t.Fatal(err)
	}
	if !l.Recover("t2") {
		t.Fatal("recover changed nothing")
	}
	v := l.ProviderView()
	js := mustJSON(t, v)
	if !strings.Contains(js, "second") || !strings.Contains(js, `"call_id":"c2"`) || strings.Contains(js, filler(2000, 1)[:100]) {
		t.Fatalf("recovery did not keep exactly the current turn: %s", js)
	}
	if got := len(l.History()); got != 7 {
		t.Fatalf("history has %d messages after recovery, want 7", got)
	}
	if l.Recover("t2") {
		t.Fatal("a second recovery with nothing left before the turn reported a change")
	}
}

// scriptedCondenser answers from a script: each entry is a reply or an error.
type scriptedCondenser struct {
	mu      sync.Mutex
	replies []func(CondenseInput) (string, error)
	calls   int
	started chan struct{}
}

func (s *scriptedCondenser) Condense(ctx stdctx.Context, in CondenseInput) (string, error) {
	s.mu.Lock()
	i := s.calls
	s.calls++
	s.mu.Unlock()
	if i >= len(s.replies) {
		i = len(s.replies) - 1
	}
	return s.replies[i](in)
}

func goodSummary(in CondenseInput) (string, error) {
	return "## Goal\nship it\n## Progress\nread files " + strings.Join(in.Pins, " ") + "\n## Next\ntest", nil
}

func badSummary(CondenseInput) (string, error) { return "no sections here", nil }

func unavailable(CondenseInput) (string, error) { return "", errors.New("HTTP 503") }

// fillLane appends n exchanges and asks for the working set after each.
func fillLane(t *testing.T, l *Lane, n, budget int) {
	t.Helper()
	_ = l.Append(user("t1", "do the work"))
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("c%d", i)
		_ = l.Append(call("t1", id, "read", `{"path":"f"}`), result("t1", id, filler(600, i)))
		ms, err := l.WorkingSet(stdctx.Background(), "t1", budget)
		if err != nil {
			t.Fatal(err)
		}
		if got := viewTokens(ms); got > budget {
			t.Fatalf("step %d: working set %d tokens over the budget %d", i, got, budget)
		}
	}
}

func TestCondensationFailuresLandOnTheFallback(t *testing.T) {
	for _, tc := range []struct {
		name    string
		replies []func(CondenseInput) (string, error)
		method  string
		note    string
	}{
		{"valid", []func(CondenseInput) (string, error){goodSummary}, MethodLLM, ""},
		{"invalid once", []func(CondenseInput) (string, error){badSummary, goodSummary}, MethodLLM, ""},
		{"invalid twice", []func(CondenseInput) (string, error){badSummary, badSummary}, MethodFallback, "invalid twice"},
		{"unavailable", []func(CondenseInput) (string, error){unavailable}, MethodFallback, "unavailable"},
		{"over its cap", []func(CondenseInput) (string, error){func(in CondenseInput) (string, error) {
			s, _ := goodSummary(in)
			return s + filler(4000, 1), nil
		}}, MethodFallback, "over its cap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var evs []Compaction
			cond := &scriptedCondenser{replies: tc.replies}
			sp := NewSpace(openPebble(t, ""), Options{Compaction: true, Condenser: cond, PreviewBytes: 1024,
				OnCompact: func(c Compaction) { evs = append(evs, c) }})
			l, _ := sp.Open("s1", "")
			_ = l.Pin(user("t0", "never forget: the answer is 42"))
			fillLane(t, l, 30, 2000)
			if len(evs) == 0 {
				t.Fatal("no compaction")
			}
			if evs[0].Method != tc.method || !strings.Contains(evs[0].Note, tc.note) {
				t.Fatalf("first compaction %+v, want method %s note ~%q", evs[0], tc.method, tc.note)
			}
			for _, e := range evs {
				if e.After >= e.Before {
					t.Fatalf("compaction did not cut: %+v", e)
				}
			}
			if v := mustJSON(t, l.ProviderView()); !strings.Contains(v, "the answer is 42") {
				t.Fatalf("the pin is lost: %s", v)
			}
		})
	}
}

func TestCondensationTimeoutLandsOnTheFallback(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	started := make(chan struct{}, 1)
	block := condenserFunc(func(ctx stdctx.Context, in CondenseInput) (string, error) {
		select {
		case started <- struct{}{}:
		default:
		}
		<-ctx.Done()
		return "", ctx.Err()
	})
	var evs []Compaction
	sp := NewSpace(openPebble(t, ""), Options{Compaction: true, Condenser: block, Clock: clk, CondenseTimeout: time.Minute,
		PreviewBytes: 1024, OnCompact: func(c Compaction) { evs = append(evs, c) }})
	l, _ := sp.Open("s1", "")
	_ = l.Append(user("t1", "go"))
	for i := 0; i < 8; i++ {
		id := fmt.Sprintf("c%d", i)
		_ = l.Append(call("t1", id, "read", `{}`), result("t1", id, filler(600, i)))
	}
	done := make(chan []agent.Message)
	go func() {
		ms, _ := l.WorkingSet(stdctx.Background(), "t1", 1000)
		done <- ms
	}()
	<-started
	if !clk.BlockUntil(1, 10*time.Second) {
		t.Fatal("the condensation armed no timer")
	}
	clk.Advance(time.Minute)
	ms := <-done
	if viewTokens(ms) > 1000 || len(evs) != 1 || evs[0].Method != MethodFallback || !strings.Contains(evs[0].Note, "timed out") {
		t.Fatalf("timeout: %d tokens, events %+v", viewTokens(ms), evs)
	}
}

type condenserFunc func(stdctx.Context, CondenseInput) (string, error)

func (f condenserFunc) Condense(ctx stdctx.Context, in CondenseInput) (string, error) {
	return f(ctx, in)
}

func TestStallGoesToTheFallbackAndSaysSo(t *testing.T) {
	var evs []Compaction
	// a summary that costs as much as what it condenses: under 5% cut
	cond := &scriptedCondenser{replies: []func(CondenseInput) (string, error){func(in CondenseInput) (string, error) {
		s, _ := goodSummary(in)
		n := 0
		for _, m := range in.Items {
			n += agent.MessageTokens(m)
		}
		for agent.Tokens(s) < min(n, in.CapTokens-8) {
			s += " more"
		}
		return s, nil
	}}}
	sp := NewSpace(openPebble(t, ""), Options{Compaction: true, Condenser: cond, PreviewBytes: 4096,
		OnCompact: func(c Compaction) { evs = append(evs, c) }})
	l, _ := sp.Open("s1", "")
	_ = l.Append(user("t1", filler(3000, 1)))
	_ = l.Append(call("t1", "c1", "read", `{}`), result("t1", "c1", "x"), call("t1", "c2", "read", `{}`), result("t1", "c2", "y"))
	ms, _ := l.WorkingSet(stdctx.Background(), "t1", 900)
	if len(evs) != 1 || !strings.Contains(evs[0].Note, "stall") || evs[0].Method == MethodLLM {
		t.Fatalf("stall: events %+v", evs)
	}
	if viewTokens(ms) > 900 {
		t.Fatalf("after a stall the view is %d tokens", viewTokens(ms))
	}
	if m, at := l.LastCompaction(); m != evs[0].Method || at.IsZero() {
		t.Fatalf("LastCompaction = %q %v, want %q and its time (the TUI's context line)", m, at, evs[0].Method)
	}
}

func TestDisabledCompactionWaitsUntilOverBudget(t *testing.T) {
	var evs []Compaction
	sp := NewSpace(openPebble(t, ""), Options{Compaction: false, Condenser: &scriptedCondenser{replies: []func(CondenseInput) (string, error){goodSummary}},
		OnCompact: func(c Compaction) { evs = append(evs, c) }})
	l, _ := sp.Open("s1", "")
	_ = l.Append(user("t1", "go"))
	budget := 1000
	for i := 0; ; i++ {
		id := fmt.Sprintf("c%d", i)
		_ = l.Append(call("t1", id, "read", `{}`), result("t1", id, filler(200, i)))
		used := viewTokens(l.ProviderView())
		ms, _ := l.WorkingSet(stdctx.Background(), "t1", budget)
		if used <= budget && len(evs) > 0 {
			t.Fatalf("compacted at %d of %d tokens with compaction disabled", used, budget)
		}
		if used > budget {
			if len(evs) != 1 || evs[0].Method != MethodFallback || viewTokens(ms) > budget*targetPct/100+lineTokens*2 {
				t.Fatalf("over budget: events %+v, view %d", evs, viewTokens(ms))
			}
			return
		}
		if i > 100 {
			t.Fatal("never over budget")
		}
	}
}

func TestForkSharesThePrefixAndCopiesNothing(t *testing.T) {
	st := openPebble(t, "")
	work := t.TempDir()
	_ = os.WriteFile(filepath.Join(work, "AGENTS.md"), []byte("be brief"), 0o600)
	sp := NewSpace(st, Options{})
	main, _ := sp.Open("s1", work)
	_ = main.Append(user("t1", "hello"), agent.Message{Role: agent.RoleAssistant, Text: "hi", Task: "t1"})
	count := func() int {
		n := 0
		_ = st.Scan(nil, func(_, _ []byte) error { n++; return nil })
		return n
	}
	n0 := count()
	child, err := sp.Fork("s2", "s1", UpToHead)
	if err != nil {
		t.Fatal(err)
	}
	if d := count() - n0; d != 2 {
		t.Fatalf("a fork wrote %d records, want 2 (the lane and the session)", d)
	}
	if got, want := mustJSON(t, child.ProviderView()), mustJSON(t, main.ProviderView()); got != want {
		t.Fatalf("a fork at the head differs:\n%s\n%s", got, want)
	}
	_ = child.Append(user("t2", "child only"))
	_ = main.Append(user("t3", "main only"))
	cv, mv := mustJSON(t, child.ProviderView()), mustJSON(t, main.ProviderView())
	if strings.Contains(cv, "main only") || strings.Contains(mv, "child only") || !strings.Contains(cv, "hello") {
		t.Fatalf("lanes are not independent:\nchild %s\nmain %s", cv, mv)
	}
	sys, _ := sp.Fork("s3", "s1", UpToSystem)
	v := sys.ProviderView()
	if len(v) != 1 || !strings.Contains(v[0].Text, "be brief") {
		t.Fatalf("a system fork carries %s", mustJSON(t, v))
	}
	if _, err := sp.Fork("s2", "s1", UpToHead); !errors.Is(err, ErrExists) {
		t.Fatalf("fork onto an existing session: %v", err)
	}
	// after a restart the lanes are the same
	sp2 := NewSpace(st, Options{})
	c2, _ := sp2.Lookup("s2")
	if mustJSON(t, c2.ProviderView()) != cv {
		t.Fatal("a child lane changed across a rebuild")
	}
}

func TestBadIDsAreRefused(t *testing.T) {
	sp := NewSpace(openPebble(t, ""), Options{})
	for _, id := range []string{"", "a/b", "x\x00", strings.Repeat("a", 200)} {
		if _, err := sp.Open(id, ""); !errors.Is(err, ErrBadID) {
			t.Fatalf("Open(%q): %v", id, err)
		}
	}
	if _, err := sp.Lookup("nobody"); !errors.Is(err, ErrNoSession) {
		t.Fatalf("Lookup of an unknown session: %v", err)
	}
}

func toolsCall(session, args string) tools.Call {
	return tools.Call{ID: "r1", Name: RecallTool, Args: json.RawMessage(args), Session: session, Task: "t1"}
}

// TestInstructionFilesLinkedOutOfTheProjectAreNotRead: AGENTS.md ->
// /proc/self/environ, CLAUDE.md -> a key outside, and a .harn/instructions
// file linked out never reach the provider view; a file linked inside
// the project does.
func TestInstructionFilesLinkedOutOfTheProjectAreNotRead(t *testing.T) {
	base := t.TempDir()
	work := filepath.Join(base, "repo")
	secret := filepath.Join(base, "node.pem")
	if err := os.WriteFile(secret, []byte("BEGIN PRIVATE KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(work, ".harn", "instructions"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "RULES.md"), []byte("inside rules"), 0o600); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"AGENTS.md": "/proc/self/environ", "CLAUDE.md": secret,
		".harn/instructions/a.md": "../../../node.pem", ".harn/instructions/b.md": "../../RULES.md"} {
		if err := os.Symlink(target, filepath.Join(work, link)); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HARN_E2E_CANARY", "ENVIRON-CANARY")
	got := readInstructions(work)
	for _, leak := range []string{"PRIVATE KEY", "ENVIRON-CANARY", "HARN_E2E_CANARY"} {
		if strings.Contains(got, leak) {
			t.Fatalf("the instructions hold %q: %q", leak, got)
		}
	}
	if !strings.Contains(got, "inside rules") {
		t.Fatalf("a file linked inside the project was not read: %q", got)
	}
}
