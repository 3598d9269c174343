package tasks

import "testing"

// TestCompactionOnFollowsTheNodeUnlessTheRunSays: the node's
// compaction.enabled is a harn session's default; a run's
// --compaction[=false] overrides it.
func TestCompactionOnFollowsTheNodeUnlessTheRunSays(t *testing.T) {
	for _, tc := range []struct {
		nodeOff bool
		o       HarnOptions
		want    bool
	}{
		{false, HarnOptions{}, true},
		{true, HarnOptions{}, false},
		{true, HarnOptions{Compaction: true}, true},
		{false, HarnOptions{NoCompaction: true}, false},
	} {
		h := &Host{cfg: Config{NoCompaction: tc.nodeOff}}
		if got := h.compactionOn(tc.o); got != tc.want {
			t.Fatalf("node off %v, run %+v: %v, want %v", tc.nodeOff, tc.o, got, tc.want)
		}
	}
}
