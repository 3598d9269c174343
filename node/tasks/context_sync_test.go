package tasks

import (
	"bytes"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/runtime/agent/tools"
	"github.com/harn-dev/harn/util/clock"
)

// opLog is a KV with PutKVSync and a Sink that log their writes to the
// context keyspace and the ingests, in the order they happen.
type opLog struct {
	memKV
	mu  sync.Mutex
	ops []string
}

func (l *opLog) note(op string) {
	l.mu.Lock()
	l.ops = append(l.ops, op)
	l.mu.Unlock()
}

func (l *opLog) PutKV(space string, key, val []byte) error {
	if space == contextSpace && strings.HasPrefix(string(key), "s/") {
		l.note("context put")
	}
	return l.memKV.PutKV(space, key, val)
}

func (l *opLog) PutKVSync(space string, key, val []byte) error {
	if space == contextSpace && strings.HasPrefix(string(key), "s/") {
		l.note("context sync")
	}
	return l.memKV.PutKV(space, key, val)
}

func (l *opLog) Ingest(evs []presence.Event) error {
	for _, e := range evs {
		if e.Type == presence.TypeSessionStart {
			l.note("ingest session.start")
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
