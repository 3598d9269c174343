package ledger

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them.
//
// One leak is by design (docs/design.md, "Open is bounded"): a pebble.Open
// abandoned after OpenTimeout stays parked on its gated file system until
// the process exits, with the goroutines of its half-open Pebble (cache,
// scheduler, cleanup, flush). A test that abandons one on purpose calls
// allowAbandonedOpens, which checks first that nothing leaked before it.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(allowed()...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

var (
	allowMu  sync.Mutex
	allowOps []goleak.Option
)

func allowed() []goleak.Option {
	allowMu.Lock()
	defer allowMu.Unlock()
	return append([]goleak.Option(nil), allowOps...)
}

// allowAbandonedOpens fails t if a goroutine leaked before it, then, when
// t ends, allows every goroutine alive then: the abandoned attempts of t.
// Tests in this package do not run in parallel, so nothing else is
// running.
func allowAbandonedOpens(t *testing.T) {
	t.Helper()
	if err := goleak.Find(allowed()...); err != nil {
		t.Fatalf("goroutines leaked before this test: %v", err)
	}
	t.Cleanup(func() {
		allowMu.Lock()
		allowOps = append(allowOps, goleak.IgnoreCurrent())
		allowMu.Unlock()
	})
}
