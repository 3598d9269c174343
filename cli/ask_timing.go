package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/node/tasks/taskwire"
	"github.com/harn-dev/harn/util/clock"
	"github.com/harn-dev/harn/util/text"
)

// askTiming is `harn ask --timing`: one stderr line per phase of the
// ask, each with its offset from the command's start and the step since
// the previous line. An event's line also has the node's timestamp of
// the event (the same machine's clock for a local node) and how long it
// took to reach the client after that: the long poll's wake-up latency.
type askTiming struct {
	w     io.Writer // nil: off
	clk   clock.Clock
	start time.Time
	last  time.Time
}

func newAskTiming(c *cobra.Command) *askTiming {
	t := &askTiming{clk: clock.Real{}}
	if on, _ := c.Flags().GetBool("timing"); on {
		t.w = c.ErrOrStderr()
	}
	t.start = t.clk.Now()
	t.last = t.start
	if t.w != nil {
		fmt.Fprintf(t.w, "timing: start at %s\n", t.start.Format("15:04:05.000000"))
	}
	return t
}

func (t *askTiming) mark(what string) {
	if t.w == nil {
		return
	}
	now := t.clk.Now()
	fmt.Fprintf(t.w, "timing: %8.2f ms  +%7.2f ms  %s\n", ms(now.Sub(t.start)), ms(now.Sub(t.last)), what)
	t.last = now
}

// polled marks the arrival of a poll's events.
func (t *askTiming) polled(evs []taskwire.Event) {
	if t.w == nil {
		return
	}
	now := t.clk.Now()
	for _, e := range evs {
		fmt.Fprintf(t.w, "timing: %8.2f ms  +%7.2f ms  event %s (node time %+.2f ms, reached the client %.2f ms after)\n",
			ms(now.Sub(t.start)), ms(now.Sub(t.last)), text.Sanitize(e.Type), ms(e.At.Sub(t.start)), ms(now.Sub(e.At)))
		t.last = now
	}
}

func (t *askTiming) done() { t.mark("done") }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
