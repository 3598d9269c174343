package cluster

import (
	"testing"

	"go.uber.org/goleak"
)

// TestClusterCloseIsSafeHalfBuiltAndTwice: a cluster that never got past
// its first step closes, twice.
func TestClusterCloseIsSafeHalfBuiltAndTwice(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	c, err := New(DefaultConfig(), Deps{Name: "n"})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	c.Close()
}
