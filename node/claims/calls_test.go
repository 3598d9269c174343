package claims

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/harn-dev/harn/util/clock"
)

func callReq(s, id, path string) Request {
	return Request{Session: s, Repo: "R", Paths: []string{path}, Abs: []string{"/src/r/" + path},
		Call: CallRef{ID: id, Tool: "Write"}}
}

func holds(l *Local, s, path string) bool {
	c, ok := l.ClaimOf("R", path)
	return ok && c.SessionID == s
}

func TestADeniedWriteReleasesOnlyTheClaimThatCallTook(t *testing.T) {
	d, ft, _, _ := newRetryDecider(t)
	ctx := context.Background()
	// Two write calls of one session in flight at once, each by its id.
	d.Decide(ctx, callReq("a", "toolu_x", "x.go"))
	d.Decide(ctx, callReq("a", "toolu_y", "y.go"))
	if err := d.ReleaseTaken(ctx, "a", CallRef{ID: "toolu_x"}); err != nil {
		t.Fatal(err)
	}
	if holds(ft.Local, "a", "x.go") || !holds(ft.Local, "a", "y.go") {
		t.Fatalf("denying toolu_x: x held %v, y held %v; want only y", holds(ft.Local, "a", "x.go"), holds(ft.Local, "a", "y.go"))
	}
	// A denial that names no id matches the call by its input's digest.
	in := []byte(`{"file_path":"/src/r/z.go","content":"package r\n"}`)
	r := callReq("a", "toolu_z", "z.go")
	r.Call.Digest = CallDigest("Write", in)
	d.Decide(ctx, r)
	if err := d.ReleaseTaken(ctx, "a", CallRef{Tool: "Write", Digest: CallDigest("Write", []byte(`{ "content":"package r\n", "file_path":"/src/r/z.go"}`))}); err != nil {
		t.Fatal(err)
	}
	if holds(ft.Local, "a", "z.go") || !holds(ft.Local, "a", "y.go") {
		t.Fatal("the denial matched by digest released the wrong claim")
	}
}

func TestADeniedCallKeepsPathsAnotherCallInFlightWrites(t *testing.T) {
	d, ft, _, _ := newRetryDecider(t)
	ctx := context.Background()
	d.Decide(ctx, callReq("a", "toolu_1", "x.go")) // takes x
	d.Decide(ctx, callReq("a", "toolu_2", "x.go")) // writes x too, takes nothing
	_ = d.ReleaseTaken(ctx, "a", CallRef{ID: "toolu_1"})
	if !holds(ft.Local, "a", "x.go") {
		t.Fatal("denying one call released a path another call in flight writes")
	}
	_ = d.ReleaseTaken(ctx, "a", CallRef{ID: "toolu_2"})
	if holds(ft.Local, "a", "x.go") {
		t.Fatal("the path passed to the second call; its denial must release it")
	}
}

func TestALocallyDeniedWriteReleasesItsClaimAtTheTurnsEnd(t *testing.T) {
	d, ft, fc, rows := newRetryDecider(t)
	ctx := context.Background()
	d.Decide(ctx, callReq("a", "toolu_ran", "ran.go"))
	d.Decide(ctx, callReq("a", "toolu_no", "no.go")) // denied in the agent's own prompt
	_ = d.CallEnded(ctx, "a", CallRef{ID: "toolu_ran"}, false)
	fc.Advance(time.Second)
	if err := d.TurnEnded(ctx, "a", fc.Now(), false); err != nil {
		t.Fatal(err)
	}
	if !holds(ft.Local, "a", "ran.go") || holds(ft.Local, "a", "no.go") {
		t.Fatalf("after Stop: ran held %v, no held %v; want ran only", holds(ft.Local, "a", "ran.go"), holds(ft.Local, "a", "no.go"))
	}
	if got := rows.log(); !slices.Contains(got, "dropped a /src/r/no.go") {
		t.Fatalf("the row was not told: %v", got)
	}
	// A session that never reported a call's end by id: its calls are
	// forgotten at the turn's end, their claims kept.
	d.Decide(ctx, callReq("b", "toolu_b", "b.go"))
	_ = d.TurnEnded(ctx, "b", fc.Now(), false)
	if !holds(ft.Local, "b", "b.go") {
		t.Fatal("a turn's end released a claim of an agent not known to report call ends")
	}
	// A call announced after the turn-ending event is not the turn's.
	d.Decide(ctx, callReq("a", "toolu_late", "late.go"))
	_ = d.TurnEnded(ctx, "a", fc.Now().Add(-time.Millisecond), false)
	if !holds(ft.Local, "a", "late.go") {
		t.Fatal("a turn's end released a call announced after it")
	}
}

func TestAFailedWriteReleasesWhatItTook(t *testing.T) {
	d, ft, _, _ := newRetryDecider(t)
	ctx := context.Background()
	d.Decide(ctx, callReq("a", "toolu_f", "f.go"))
	_ = d.CallEnded(ctx, "a", CallRef{ID: "toolu_f"}, true)
	if holds(ft.Local, "a", "f.go") {
		t.Fatal("a failed write (nothing written) still holds its claim")
	}
}

// memJournal is a Journal in memory, shared by deciders as a ledger is
// by a node's runs.
type memJournal struct {
	mu sync.Mutex
	m  map[string]string
}

func (j *memJournal) PutKVSync(space string, k, v []byte) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.m[space+"/"+string(k)] = string(v)
	return nil
}
func (j *memJournal) DeleteKVSync(space string, k []byte) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.m, space+"/"+string(k))
	return nil
}
func (j *memJournal) ScanKV(space string, _ []byte, fn func(k, v []byte) error) error {
	j.mu.Lock()
	var keys []string
	for k := range j.m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	vals := map[string]string{}
	for _, k := range keys {
		vals[k] = j.m[k]
	}
	j.mu.Unlock()
	for _, k := range keys {
		if rest, ok := cutPrefix(k, space+"/"); ok {
			if err := fn([]byte(rest), []byte(vals[k])); err != nil {
				return err
			}
		}
	}
	return nil
}
func (j *memJournal) len() int { j.mu.Lock(); defer j.mu.Unlock(); return len(j.m) }

func cutPrefix(s, p string) (string, bool) {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):], true
	}
	return s, false
}

func TestAPendingClaimSurvivesARestart(t *testing.T) {
	j := &memJournal{m: map[string]string{}}
	ft := &flakyTable{Local: NewLocal()}
	fc := clock.NewFake(time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC))
	cfg := Config{Node: "n1", Table: ft, Writer: ft, Describe: fakeDescribe{}, Clock: fc, Journal: j}
	ft.down.Store(true)
	first := New(cfg)
	first.Decide(context.Background(), req("a"))
	first.Decide(context.Background(), Request{Session: "a", Repo: "R", Paths: []string{"pkg/y.go", "pkg/z.go"}})
	_ = first.dropPending("a", "R", []string{"pkg/z.go"}) // a release while pending
	first.Close()                                         // the node goes down, the claims unrecorded
	if j.len() != 2 {
		t.Fatalf("the journal holds %d pending claims, want 2", j.len())
	}

	rows := &rowLog{landed: make(chan struct{}, 2)}
	cfg.Rows = rows
	second := New(cfg)
	defer second.Close()
	n, err := second.Restore()
	if err != nil || n != 2 {
		t.Fatalf("restore: %d, %v; want 2", n, err)
	}
	var got []string
	for _, p := range second.Pending("a") {
		got = append(got, p.Paths...)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"pkg/x.go", "pkg/y.go"}) {
		t.Fatalf("pending after the restart: %v", got)
	}
	ft.down.Store(false)
	if !fc.BlockUntil(1, 5*time.Second) {
		t.Fatal("the restored claims armed no retry")
	}
	fc.Advance(retryMin)
	if !waitFor(func() bool { return len(second.Pending("a")) == 0 }) {
		t.Fatal("the restored claims did not land")
	}
	if !holds(ft.Local, "a", "pkg/x.go") || !holds(ft.Local, "a", "pkg/y.go") || holds(ft.Local, "a", "pkg/z.go") {
		t.Fatal("the restored claims landed wrong")
	}
	if j.len() != 0 {
		t.Fatalf("landed claims stay in the journal: %d", j.len())
	}
	if !slices.Contains(rows.log(), "landed a /src/r/pkg/x.go") {
		t.Fatalf("the row was not told the claim landed: %v", rows.log())
	}
}

// TestPropertyADeniedCallReleasesOnlyWhatNobodyWrote: for any sequence of
// write calls of one session (announced, ended, failed, denied, turn
// ends), a path is held exactly when a call in flight writes it, or a
// call that ran wrote it since it was last taken.
func TestPropertyADeniedCallReleasesOnlyWhatNobodyWrote(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		l := NewLocal()
		fc := clock.NewFake(time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC))
		d := New(Config{Node: "n1", Table: l, Writer: l, Describe: fakeDescribe{}, Clock: fc})
		defer d.Close()
		ctx := context.Background()
		paths := []string{"a.go", "b.go", "c.go"}
		inflight := map[string][]string{} // call -> paths it writes
		written := map[string]bool{}
		next := 0
		for step := range rapid.IntRange(1, 30).Draw(rt, "steps") {
			op := rapid.SampledFrom([]string{"pre", "pre", "ran", "failed", "deny", "turn"}).Draw(rt, fmt.Sprint("op", step))
			var ids []string
			for id := range inflight {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			switch op {
			case "pre":
				next++
				id := fmt.Sprintf("toolu_%d", next)
				ps := rapid.SliceOfNDistinct(rapid.SampledFrom(paths), 1, 2, rapid.ID).Draw(rt, "paths")
				for _, p := range ps {
					if !holds(l, "s", p) {
						written[p] = false // taken fresh
					}
				}
				d.Decide(ctx, Request{Session: "s", Repo: "R", Paths: ps, Call: CallRef{ID: id, Tool: "Write"}})
				inflight[id] = ps
			case "ran", "failed", "deny":
				if len(ids) == 0 {
					continue
				}
				id := rapid.SampledFrom(ids).Draw(rt, "call")
				switch op {
				case "ran":
					_ = d.CallEnded(ctx, "s", CallRef{ID: id}, false)
					for _, p := range inflight[id] {
						written[p] = true
					}
				case "failed":
					_ = d.CallEnded(ctx, "s", CallRef{ID: id}, true)
				default:
					_ = d.ReleaseTaken(ctx, "s", CallRef{ID: id})
				}
				delete(inflight, id)
			case "turn":
				fc.Advance(time.Millisecond)
				_ = d.TurnEnded(ctx, "s", fc.Now(), true)
				clear(inflight)
			}
			fc.Advance(time.Millisecond)
			for _, p := range paths {
				want := written[p]
				for _, ps := range inflight {
					want = want || slices.Contains(ps, p)
				}
				if got := holds(l, "s", p); got != want {
					rt.Fatalf("after %s: %s held %v, want %v (in flight %v, written %v)", op, p, got, want, inflight, written)
				}
			}
		}
	})
}
