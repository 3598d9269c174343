package runtime

import (
	"time"

	"github.com/harn-dev/harn/util/clock"
)

// NewFakeClock returns the fake clock of this package's and the
// executor's tests: util/clock's inline fake at a fixed instant, whose due
// AfterFunc callbacks run on the goroutine that advances it, so a test
// sees their effects when Advance returns. Production code never uses it.
func NewFakeClock() *clock.Fake {
	return clock.NewInlineFake(time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC))
}
