package agent

import (
	"context"
	"time"
)

// Tracer is the seam of the node's OpenTelemetry GenAI spans: it opens a
// span around each provider request and returns the context the request
// runs in and the function that ends the span. The loop does not import
// the OTel SDK; the node implements Tracer. Nil: no spans. It must not
// block.
type Tracer interface {
	ModelCall(ctx context.Context, c ModelCallStart) (context.Context, func(ModelCallEnd))
}

// Admission decisions of a provider request (ModelCallStart.Admission).
const (
	AdmissionAdmitted   = "admitted"    // the request's estimate fits the usable input budget
	AdmissionOverBudget = "over_budget" // it does not: sent anyway, the provider may refuse it
)

// ModelCallStart is what a span says of a provider request before it is
// sent. Messages carry prompt text: a tracer records them only when its
// configuration says so (off by default).
type ModelCallStart struct {
	Provider, Model, Session, Task string
	Step, Attempt                  int
	MaxOutput                      int
	Estimated                      int    // harn's input estimate
	Budget                         int    // the usable input budget
	Admission                      string // AdmissionAdmitted or AdmissionOverBudget
	Compaction                     string // the context's last compaction method, "" for none
	Messages                       []Message
}

// ModelCallEnd is how the request ended: the provider's token counts, and
// the error (ErrClass its class) when it failed.
type ModelCallEnd struct {
	Input, Output, CacheRead int
	Err                      error
	ErrClass                 string
}

// CompactionReporter is what a Context may tell of its last compaction:
// the method ("" for none yet) and when it ran.
type CompactionReporter interface {
	LastCompaction() (method string, at time.Time)
}

// compactionOf is c's last compaction method, "" when it reports none.
func compactionOf(c Context) string {
	if r, ok := c.(CompactionReporter); ok {
		m, _ := r.LastCompaction()
		return m
	}
	return ""
}
