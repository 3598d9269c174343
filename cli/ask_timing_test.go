package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/util/clock"
)

func TestAskTimingLinesHaveOffsetsStepsAndWakeUpLatency(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	var b strings.Builder
	tm := &askTiming{w: &b, clk: clk, start: t0, last: t0}
	clk.Advance(3 * time.Millisecond)
	tm.mark("connected")
	clk.Advance(20 * time.Millisecond)
	tm.polled([]runtime.LoopEvent{{Type: "turn.\x1bend", At: t0.Add(21 * time.Millisecond)}})
	tm.done()
	want := "timing:     3.00 ms  +   3.00 ms  connected\n" +
		"timing:    23.00 ms  +  20.00 ms  event turn.end (node time +21.00 ms, reached the client 2.00 ms after)\n" +
		"timing:    23.00 ms  +   0.00 ms  done\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	off := &askTiming{clk: clk}
	off.mark("x")
	off.polled([]runtime.LoopEvent{{Type: "y"}})
	off.done() // no writer: nothing, and no panic
}
