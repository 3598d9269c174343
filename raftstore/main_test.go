package raftstore

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them.
//
// Two of the store's own goroutines may outlive it by design: raft never
// answers a future still queued in its channels when it shuts down (a
// VerifyLeader behind the verify queue, an Apply not yet consumed), so a
// waiter parked on one (Store.wait) and the bounded drain in Close that
// waits for such waiters can stay blocked after Close returned. They hold
// nothing else (store.go, futureDrain).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/harn-dev/harn/raftstore.(*Store).wait.func1"),
		goleak.IgnoreAnyFunction("github.com/harn-dev/harn/raftstore.(*Store).Close.func1"),
	)
}
