package tasks

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/node/ledger"
	"github.com/harn-dev/harn/runtime/agent"
	"github.com/harn-dev/harn/util/clock"
)

// BenchmarkHistoryEventStored is the cost the stored history adds to each
// loop event of a harn session: one JSON encode and one unsynced Pebble
// write of the node's ledger (a streamed text delta of 64 bytes).
func BenchmarkHistoryEventStored(b *testing.B) {
	l, err := ledger.Open(ledger.Config{Dir: b.TempDir(), MinFreeBytes: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	h, err := New(Config{Node: "n1", KV: l, Key: bytes.Repeat([]byte{7}, 32), Clock: clock.Real{}})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	put := h.persistHistory("h-bench")
	e := agent.Event{Type: agent.EvText, Task: "t-01J0000000000000000000000", Step: 1, Text: strings.Repeat("x", 64), At: time.Unix(1, 0)}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		put(i, e)
	}
}
