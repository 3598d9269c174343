package tasks

import (
	"bytes"
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/util/clock"
)

// memKV is an in-memory KV for unit tests of the room (the node passes
// its Pebble ledger).
type memKV struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (k *memKV) PutKV(space string, key, val []byte) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string][]byte{}
	}
	k.m[space+"\x00"+string(key)] = bytes.Clone(val)
	return nil
}

func (k *memKV) ScanKV(space string, prefix []byte, fn func(key, val []byte) error) error {
	k.mu.Lock()
	var keys []string
	p := space + "\x00" + string(prefix)
	for key := range k.m {
		if strings.HasPrefix(key, p) {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	vals := make([][]byte, len(keys))
	for i, key := range keys {
		vals[i] = k.m[key]
	}
	k.mu.Unlock()
	for i, key := range keys {
		if err := fn([]byte(key[len(space)+1:]), vals[i]); err != nil {
			return err
		}
	}
	return nil
}

type fixedSessions map[string]presence.State

func (f fixedSessions) Resolve(h string) (presence.State, error) {
	if s, ok := f[h]; ok {
		return s, nil
	}
	return presence.State{}, errors.New("unknown session")
}

func newHost(t testing.TB, clk clock.Clock) (*Host, *memKV) {
	t.Helper()
	kv := &memKV{}
	h, err := New(Config{Node: "n1", KV: kv, Key: bytes.Repeat([]byte{7}, 32), Clock: clk,
		Sessions: fixedSessions{"cc1": {SessionID: "cc1", Agent: "claude-code", Cwd: "/work"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h, kv
}

func TestRuntimeLedgerKeepsRecordsInOrderPerTask(t *testing.T) {
	kv := &memKV{}
	l := NewLedger(kv)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := uint64(1); i <= 300; i++ {
		for _, task := range []string{"t-a", "t-ab"} {
			if err := l.Append(runtime.Record{V: 1, Seq: i, TS: now, Session: "s", Task: task, Kind: runtime.RecState, State: runtime.StateRunning}); err != nil {
				t.Fatal(err)
			}
		}
	}
	recs, err := l.Records("t-a")
	if err != nil || len(recs) != 300 {
		t.Fatalf("records: %d %v", len(recs), err)
	}
	for i, r := range recs {
		if r.Seq != uint64(i+1) || r.Task != "t-a" {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
	if err := l.Append(runtime.Record{Task: "bad\x00id"}); !errors.Is(err, ErrBadTaskID) {
		t.Fatalf("a task id with NUL: %v", err)
	}
}

func TestPreCallCheckDeniesOutsideGrantsAndRecordsTheDenial(t *testing.T) {
	h, kv := newHost(t, clock.Real{})
	g, _ := runtime.Profile("read-only")
	res, err := h.Do(Action{Op: OpStart, Session: "cc1", Text: "look", Grants: g})
	if err != nil {
		t.Fatal(err)
	}
	waitRunning(t, h, res.Task.ID)
	v := h.Decide(context.Background(), Query{Phase: PhasePre, Session: "cc1", Tool: "Write", Call: "toolu_1",
		Input: []byte(`{"file_path":"/work/x"}`)})
	if v.Decision != DecideDeny || !strings.Contains(v.Reason, res.Task.ID) {
		t.Fatalf("Write under read-only: %+v", v)
	}
	recs, _ := NewLedger(kv).Records(res.Task.ID)
	found := false
	for _, r := range recs {
		found = found || (r.Kind == runtime.RecRefused && r.Capability == "Write")
	}
	if !found {
		t.Fatalf("the denial is not in the ledger: %+v", recs)
	}
	if v := h.Decide(context.Background(), Query{Phase: PhasePre, Session: "cc1", Tool: "Read", Call: "toolu_2",
		Input: []byte(`{"file_path":"/work/x"}`)}); v.Decision != DecideAllow {
		t.Fatalf("Read under read-only: %+v", v)
	}
	if v := h.Decide(context.Background(), Query{Phase: PhasePre, Session: "other", Tool: "Write"}); v.Decision != DecideNone {
		t.Fatalf("a session without a harn task: %+v", v)
	}
}

func TestRuntimeErrorsAreClassifiedAsRefusals(t *testing.T) {
	h, _ := newHost(t, clock.Real{})
	if _, err := h.Do(Action{Op: OpStart, Session: "cc1", Text: "one"}); err != nil {
		t.Fatal(err)
	}
	_, err := h.Do(Action{Op: OpStart, Session: "cc1", Text: "two"})
	if !errors.Is(err, runtime.ErrTaskActive) || KindOf(err) != KindRefused {
		t.Fatalf("second start: %v (kind %v)", err, KindOf(err))
	}
	if _, err := h.Do(Action{Op: OpShow, Task: "t-none"}); KindOf(err) != KindNotFound {
		t.Fatalf("unknown task: %v", err)
	}
	if _, err := h.Do(Action{Op: OpStart, Command: "echo 'unterminated", Text: "x"}); KindOf(err) != KindBadInput {
		t.Fatalf("bad command: %v", err)
	}
}

func waitRunning(t *testing.T, h *Host, task string) {
	t.Helper()
	for i := 0; i < 400; i++ {
		if v, err := h.rt.Task(task); err == nil && v.State == runtime.StateRunning {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("task %s never ran", task)
}

func TestSecondAnswerToAPermissionRequestIsRefusedNamingTheFirst(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a := NewApprovals("n1", clk)
	type got struct {
		ok  bool
		ans Answer
	}
	ch := make(chan got, 1)
	go func() {
		_, ans, ok, _ := a.Await(context.Background(), Request{Session: "s", Tool: "Bash"}, time.Minute)
		ch <- got{ok, ans}
	}()
	var id string
	for i := 0; i < 1000 && id == ""; i++ {
		if l := a.List(); len(l) == 1 {
			id = l[0].ID
		} else {
			time.Sleep(time.Millisecond)
		}
	}
	if _, err := a.Answer(id, true, "op@b", ""); err != nil {
		t.Fatal(err)
	}
	if g := <-ch; !g.ok || !g.ans.Allow {
		t.Fatalf("await: %+v", g)
	}
	_, err := a.Answer(id, false, "op@c", "no")
	var ae *AnsweredError
	if !errors.As(err, &ae) || ae.First.By != "op@b" || !ae.First.Allow {
		t.Fatalf("second answer: %v", err)
	}
}

func TestUnansweredPermissionRequestExpiresAfterTheWait(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a := NewApprovals("n1", clk)
	ch := make(chan bool, 1)
	go func() {
		_, _, ok, _ := a.Await(context.Background(), Request{Session: "s", Tool: "Bash"}, 30*time.Second)
		ch <- ok
	}()
	var id string
	for i := 0; i < 1000 && id == ""; i++ {
		if l := a.List(); len(l) == 1 {
			id = l[0].ID
		} else {
			time.Sleep(time.Millisecond)
		}
	}
	clk.Advance(30 * time.Second)
	if ok := <-ch; ok {
		t.Fatal("answered without an answer")
	}
	if _, err := a.Answer(id, true, "late", ""); !errors.Is(err, ErrExpired) {
		t.Fatalf("late answer: %v", err)
	}
}

func TestSummaryNeverCarriesCommandArguments(t *testing.T) {
	cases := []struct{ tool, input, want string }{
		{"Bash", `{"command":"curl -H 'Authorization: secret' x"}`, "Bash: runs curl …"},
		{"Bash", `{"command":"ls"}`, "Bash: runs ls"},
		{"Write", `{"file_path":"/home/u/.ssh/id_rsa"}`, "Write: file id_rsa"},
		{"mcp__x__y", `not json`, "mcp__x__y"},
		{"WebFetch", `{"url":"https://x/?token=1"}`, "WebFetch: url"},
	}
	for _, c := range cases {
		if got := Summarize(c.tool, []byte(c.input)); got != c.want {
			t.Errorf("Summarize(%s, %s) = %q; want %q", c.tool, c.input, got, c.want)
		}
	}
}

func FuzzSummarize(f *testing.F) {
	f.Add("Bash", []byte(`{"command":"a b"}`))
	f.Add("Edit", []byte(`{"file_path":"\u001b[2J"}`))
	f.Fuzz(func(t *testing.T, tool string, in []byte) {
		s := Summarize(tool, in)
		if len([]rune(s)) > summaryChars+1 || strings.ContainsAny(s, "\x1b\n\r") {
			t.Fatalf("unsafe summary %q", s)
		}
	})
}

// BenchmarkPreCallCheckInProcess measures Decide's pre-call check in the
// node (target: p99 under 200 µs).
func BenchmarkPreCallCheckInProcess(b *testing.B) {
	h, _ := newHost(b, clock.Real{})
	full, _ := runtime.Profile("full")
	res, err := h.Do(Action{Op: OpStart, Session: "cc1", Text: "bench", Grants: full})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 1000; i++ {
		if v, _ := h.rt.Task(res.Task.ID); v.State == runtime.StateRunning {
			break
		}
		time.Sleep(time.Millisecond)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		v := h.Decide(context.Background(), Query{Phase: PhasePre, Session: "cc1", Tool: "Read",
			Input: []byte(`{"file_path":"/work/a.go"}`)})
		lat = append(lat, time.Since(t0))
		if v.Decision != DecideAllow {
			b.Fatalf("%+v", v)
		}
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
