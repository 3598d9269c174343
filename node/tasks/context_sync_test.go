package tasks

import (
	"bytes"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/agent"
	"github.com/harn-dev/harn/runtime/agent/tools"
	"github.com/harn-dev/harn/util/clock"
)

// opLog is a KV with PutKVSync and a Sink that log their writes to the
// context keyspace and the ingests, in the order they happen.
type opLog struct {
	memKV
	mu  sync.Mutex
	ops []string
	// turn also logs the context's item writes, the runtime ledger's
	// synced records and the turn's prompt and stop events
	turn bool
	// hold, when set, holds the ingest of a prompt event until it closes
	hold chan struct{}
	// batches are the event types of each ingest (with turn)
	batches [][]string
}

func (l *opLog) note(op string) {
	l.mu.Lock()
	l.ops = append(l.ops, op)
	l.mu.Unlock()
}

func (l *opLog) PutKV(space string, key, val []byte) error {
	if space == contextSpace && strings.HasPrefix(string(key), "s/") {
		l.note("context put")
	} else if l.turn && space == contextSpace && strings.Contains(string(key), "/n/") {
		l.note("context item put")
	}
	return l.memKV.PutKV(space, key, val)
}

func (l *opLog) PutKVSync(space string, key, val []byte) error {
	switch {
	case space == contextSpace && strings.HasPrefix(string(key), "s/"):
		l.note("context sync")
	case l.turn && space == contextSpace:
		l.note("context item sync")
	case l.turn && space == Space:
		l.note("runtime sync")
	}
	return l.memKV.PutKV(space, key, val)
}

func (l *opLog) Ingest(evs []presence.Event) error {
	if l.turn {
		var types []string
		for _, e := range evs {
			types = append(types, e.Type)
		}
		l.mu.Lock()
		l.batches = append(l.batches, types)
		l.mu.Unlock()
	}
	for _, e := range evs {
		if e.Type == presence.TypeUserPromptSubmit && l.hold != nil {
			select {
			case <-l.hold:
			case <-time.After(30 * time.Second):
			}
		}
		if e.Type == presence.TypeSessionStart || (l.turn && (e.Type == presence.TypeUserPromptSubmit || e.Type == presence.TypeTurnStop)) {
			l.note("ingest " + e.Type)
		}
	}
	return nil
}

func (l *opLog) log() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ops)
}

// A harn session's context record takes its own fsync unless the Sink's
// ingest syncs KV's store (IngestSyncsKV, the node's ledger): then it is
// written before the session's start event, whose synced ingest makes it
// durable before the open returns.
func TestHarnOpenSyncsItsContextOnceWithTheStartEvent(t *testing.T) {
	for _, tc := range []struct {
		syncs bool
		want  []string
	}{
		{false, []string{"context sync", "ingest session.start"}},
		{true, []string{"context put", "ingest session.start"}},
	} {
		l := &opLog{}
		h, err := New(Config{Node: "n1", KV: l, Key: bytes.Repeat([]byte{7}, 32), Clock: clock.Real{}, Sink: l, IngestSyncsKV: tc.syncs,
			Boxes: Toolboxes(tools.Config{NoMCPFiles: true, SkillDirs: []string{}})})
		if err != nil {
			t.Fatal(err)
		}
		id, err := h.OpenHarn(HarnOptions{Model: "gpt-4o", URL: "http://127.0.0.1:1/v1", Key: "k"}, t.TempDir())
		if err != nil {
			h.Close()
			t.Fatal(err)
		}
		if got := l.log(); !slices.Equal(got, tc.want) {
			t.Errorf("IngestSyncsKV %v: the open wrote %q, want %q", tc.syncs, got, tc.want)
		}
		if _, err := h.contexts.Lookup(id); err != nil {
			t.Errorf("IngestSyncsKV %v: the session's context: %v", tc.syncs, err)
		}
		h.Close()
	}
}

// runTurn opens a harn session on l (as KV and Sink) and starts one task
// whose model answers with text; l's log then holds the task's writes only.
func runTurn(t *testing.T, l *opLog, syncs bool) (*Host, string) {
	t.Helper()
	h, err := New(Config{Node: "n1", KV: l, Key: bytes.Repeat([]byte{7}, 32), Clock: clock.Real{}, Sink: l, IngestSyncsKV: syncs,
		Boxes: Toolboxes(tools.Config{NoMCPFiles: true, SkillDirs: []string{}})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	srv := modeltest.New(t, modeltest.Text("the answer"))
	id, err := h.OpenHarn(HarnOptions{Model: "test-model", URL: srv.URL(), Key: "k"}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	l.ops = nil // the open's writes: TestHarnOpenSyncsItsContextOnceWithTheStartEvent
	l.mu.Unlock()
	v, err := h.rt.Start(id, runtime.Request{Text: "a question", Grants: []runtime.Grant{{Level: runtime.Execute, Capability: "*"}}})
	if err != nil {
		t.Fatal(err)
	}
	return h, v.ID
}

// waitLogged polls l's log (bounded: 30 s) until it holds op.
func waitLogged(l *opLog, op string) []string {
	var got []string
	for i := 0; i < 3000; i++ {
		if got = l.log(); slices.Contains(got, op) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return got
}

// A harn turn's prompt and final answer take no fsync of their own when the
// Sink's ingest syncs KV's store (IngestSyncsKV): the prompt is written
// before the turn's synced prompt event (which runs beside the model call),
// the answer before the task's synced terminal record. Without it each
// takes its own. The session's stop event still follows its prompt event.
func TestHarnTurnLeavesItsPromptAndAnswerFsyncsToTheSyncedWriteAfterThem(t *testing.T) {
	for _, syncs := range []bool{false, true} {
		l := &opLog{turn: true}
		h, task := runTurn(t, l, syncs)
		waitTaskDone(t, h, task)
		got := waitLogged(l, "ingest turn.stop") // the stop event follows the terminal record
		h.Close()
		item := "context item sync" // how each of the two is written
		if syncs {
			item = "context item put"
		}
		final := slices.Index(got, "runtime sync") // the task's terminal record
		prompt, stop := slices.Index(got, "ingest "+presence.TypeUserPromptSubmit), slices.Index(got, "ingest "+presence.TypeTurnStop)
		switch {
		case len(got) == 0 || got[0] != item:
			t.Errorf("IngestSyncsKV %v: the prompt is not written first as %q: %q", syncs, item, got)
		case final < 1 || got[final-1] != item:
			t.Errorf("IngestSyncsKV %v: the answer is not written as %q just before the terminal record: %q", syncs, item, got)
		case syncs && slices.Contains(got, "context item sync"):
			t.Errorf("IngestSyncsKV %v: a context item took its own fsync: %q", syncs, got)
		case prompt < 0 || stop < prompt:
			t.Errorf("IngestSyncsKV %v: the stop event does not follow the prompt event: %q", syncs, got)
		}
	}
}

// The turn's prompt event is written beside its model call: a prompt
// ingest held up does not hold the turn (its model call, its answer, its
// terminal record), and the session's stop event still waits for it.
func TestHarnPromptEventRunsBesideTheModelCallAndKeepsItsOrder(t *testing.T) {
	l := &opLog{turn: true, hold: make(chan struct{})}
	h, task := runTurn(t, l, true)
	waitTaskDone(t, h, task) // with the prompt's ingest still held
	if got := l.log(); slices.Contains(got, "ingest "+presence.TypeUserPromptSubmit) || slices.Contains(got, "ingest "+presence.TypeTurnStop) {
		t.Fatalf("an event was ingested while the prompt's was held: %q", got)
	}
	close(l.hold)
	got := waitLogged(l, "ingest "+presence.TypeTurnStop)
	if p, s := slices.Index(got, "ingest "+presence.TypeUserPromptSubmit), slices.Index(got, "ingest "+presence.TypeTurnStop); p < 0 || s < p {
		t.Fatalf("the stop event does not follow the prompt event: %q", got)
	}
}

// A harn turn's end is one write: the final answer's output.chunk and the
// turn's stop are ingested together.
func TestHarnTurnEndIsOneIngest(t *testing.T) {
	l := &opLog{turn: true}
	h, task := runTurn(t, l, true)
	waitTaskDone(t, h, task)
	waitLogged(l, "ingest "+presence.TypeTurnStop)
	l.mu.Lock()
	batches := slices.Clone(l.batches)
	l.mu.Unlock()
	for _, b := range batches {
		if slices.Contains(b, presence.TypeTurnStop) {
			if !slices.Equal(b, []string{presence.TypeOutputChunk, presence.TypeTurnStop}) {
				t.Fatalf("the turn's end was ingested as %q, want the output.chunk and the stop in one write (all: %q)", b, batches)
			}
			return
		}
	}
	t.Fatalf("no stop ingested: %q", batches)
}

// An events poll answers with the events and the session only: no task
// view, whose lock a synced write of the loop may hold at that moment.
func TestEventsPollAnswersWithTheEventsAndTheSessionOnly(t *testing.T) {
	l := &opLog{turn: true}
	h, task := runTurn(t, l, true)
	waitTaskDone(t, h, task)
	res, err := h.Do(Action{Op: OpEvents, Task: task})
	if err != nil {
		t.Fatal(err)
	}
	sess, _ := h.SessionOfTask(task)
	if res.Task != nil || res.Session != sess || len(res.Events) == 0 || res.Events[0].Type != agent.EvTurnStart {
		t.Fatalf("events poll: task %+v, session %q (want %q), %d events", res.Task, res.Session, sess, len(res.Events))
	}
}
