package tasks

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/harn-dev/harn/presence"
	rexec "github.com/harn-dev/harn/runtime/exec"
)

// turnSink signals each turn.stop the host emits (a task ended).
type turnSink struct{ ends chan string }

func (s turnSink) Ingest(evs []presence.Event) error {
	for _, e := range evs {
		if e.Type == presence.TypeTurnStop {
			s.ends <- e.SessionID
		}
	}
	return nil
}

// fakeClaude builds the fake agent (runtime/exec/testdata/fakeagent) as
// a program named claude, so that the Claude Code stream driver runs it;
// it skips b when the build fails.
func fakeClaude(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	bin := filepath.Join(dir, "claude")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/harn-dev/harn/runtime/exec/testdata/fakeagent").CombinedOutput()
	if err != nil {
		b.Skipf("skipping: cannot build the fake agent: %v\n%s", err, out)
	}
	return bin
}

// BenchmarkTaskStartToFirstByte measures a task's start (Do start on a
// runtime session) to its executor's first byte of agent output
// (Config.OnFirstByte), one task after another on one session, with the
// fake agent: p50 and p99 of the wall time from the start call, and of
// the executor's own measure (from taking the task). This is the host
// alone, without a node.
//
// The remote variant (a start given to another node, routed over the
// mesh's mutual TLS to the owner) is node's BenchmarkTaskStartToFirstByte
// (node/tasks_bench_test.go), which runs it against a local start through
// the node's socket and the cluster round trip in the same run.
func BenchmarkTaskStartToFirstByte(b *testing.B) {
	b.Run("local", benchFirstByteLocal)
}

func benchFirstByteLocal(b *testing.B) {
	agent := fakeClaude(b)
	fb := make(chan rexec.FirstByte, 1)
	sink := turnSink{ends: make(chan string, 16)}
	h, err := New(Config{Node: "n1", KV: &memKV{}, Key: bytes.Repeat([]byte{7}, 32), Sink: sink, Grace: time.Second,
		OnFirstByte: func(f rexec.FirstByte) { fb <- f }})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	sid, err := h.OpenExec(agent+" -p --output-format stream-json", b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	const wait = 30 * time.Second
	one := func() (time.Duration, time.Duration) {
		start := time.Now()
		if _, err := h.Do(Action{Op: OpStart, Session: sid, Text: "hello"}); err != nil {
			b.Fatal(err)
		}
		var f rexec.FirstByte
		select {
		case f = <-fb:
		case <-time.After(wait):
			b.Fatalf("no first byte within %v", wait)
		}
		wall := time.Since(start)
		select {
		case <-sink.ends:
		case <-time.After(wait):
			b.Fatalf("the task did not end within %v", wait)
		}
		return wall, f.Since
	}
	for i := 0; i < 3; i++ { // warm the page cache
		one()
	}
	var wall, own []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w, o := one()
		wall = append(wall, w)
		own = append(own, o)
	}
	b.StopTimer()
	slices.Sort(wall)
	slices.Sort(own)
	b.ReportMetric(msOf(pctOf(wall, 50)), "start-fb-p50-ms")
	b.ReportMetric(msOf(pctOf(wall, 99)), "start-fb-p99-ms")
	b.ReportMetric(msOf(pctOf(own, 50)), "taken-fb-p50-ms")
	b.ReportMetric(msOf(pctOf(own, 99)), "taken-fb-p99-ms")
}

// pctOf is the p-th percentile (nearest rank) of sorted ds.
func pctOf(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := int(p/100*float64(len(ds))+0.5) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
