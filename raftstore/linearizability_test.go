package raftstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/harn-dev/harn/internal/testsupport"
)

// history collects operations from several clients.
type history struct {
	mu    sync.Mutex
	start time.Time
	ops   []porcupine.Operation
}

func (h *history) now() int64 { return int64(time.Since(h.start)) }

func (h *history) add(op porcupine.Operation) {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

// currentLeader returns a running store that believes it leads, without
// waiting (clients must not call t.Fatal).
func currentLeader(c *Cluster) *Store {
	for _, s := range c.Running() {
		if s.IsLeader() {
			return s
		}
	}
	return nil
}

// definitelyNotApplied tells refusals (the entry never reached the log)
// from failures whose outcome is unknown.
func definitelyNotApplied(err error) bool {
	if errors.Is(err, ErrUnknownOutcome) {
		return false
	}
	var nle *NotLeaderError
	return errors.As(err, &nle) || errors.Is(err, ErrClosed) || errors.Is(err, ErrInvalidCommand)
}

// workload is what the clients of one run do.
type workload struct {
	c     *Cluster
	h     *history
	seq   atomic.Int64
	keys  []string
	stats [3]atomic.Int64 // acknowledged writes, reads, unknown-outcome writes
	// readFrom picks the store a read goes to; consistent reads call
	// VerifyRead first.
	readFrom   func(rng *rand.Rand) *Store
	consistent bool
}

func runClient(ctx context.Context, w *workload, id int) {
	rng := rand.New(rand.NewPCG(uint64(id), 7))
	c, h, keys, seq, stats := w.c, w.h, w.keys, &w.seq, &w.stats
	for ctx.Err() == nil {
		// Pace the clients so that the history stays checkable.
		time.Sleep(time.Duration(500+rng.IntN(1500)) * time.Microsecond)
		s := currentLeader(c)
		if s == nil {
			continue
		}
		key := keys[rng.IntN(len(keys))]
		opCtx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		if rng.IntN(2) == 0 {
			n := seq.Add(1)
			in := testsupport.RegInput{Key: key, Write: true, Seq: n}
			call := h.now()
			_, err := s.Apply(opCtx, UpsertCommand(Upsert{SessionID: key, TS: at(int(n)),
				Lifecycle: &LifecyclePatch{TaskState: "active", Reason: strconv.FormatInt(n, 10)}}))
			ret := h.now()
			switch {
			case err == nil:
				h.add(porcupine.Operation{ClientId: id, Input: in, Call: call, Output: testsupport.RegOutput{}, Return: ret})
				stats[0].Add(1)
			case definitelyNotApplied(err):
			default:
				// Maybe applied, maybe not, maybe later: it may take
				// effect at any time after its call.
				h.add(porcupine.Operation{ClientId: id, Input: in, Call: call, Output: testsupport.RegOutput{}, Return: math.MaxInt64})
				stats[2].Add(1)
			}
		} else if s = w.readFrom(rng); s != nil {
			call := h.now()
			var err error
			if w.consistent {
				err = s.VerifyRead(opCtx)
			}
			var got int64
			if err == nil {
				if rec, ok := s.Get(key); ok {
					got, _ = strconv.ParseInt(rec.LifecycleReason, 10, 64)
				}
				ret := h.now()
				h.add(porcupine.Operation{ClientId: id, Input: testsupport.RegInput{Key: key}, Call: call, Output: testsupport.RegOutput{Seq: got}, Return: ret})
				stats[1].Add(1)
			}
		}
		cancel()
	}
}

// TestLinearizable runs clients doing lifecycle writes and consistent
// reads against a 3-node cluster while leaders are partitioned off and
// stopped, and checks the history with porcupine.
func TestLinearizable(t *testing.T) {
	if testing.Short() {
		t.Skip("linearizability check takes seconds")
	}
	c := MakeCluster(t, 3, 3)
	w := &workload{c: c, h: &history{start: time.Now()}, keys: []string{"k0", "k1", "k2", "k3"},
		readFrom: func(*rand.Rand) *Store { return currentLeader(c) }, consistent: true}
	stop := w.start(4)
	defer stop()

	// Each fault holds until what it is there for has been seen: a leader
	// cut off or crashed until the majority has elected another, and
	// every fault (and every heal) until the clients have had more
	// operations acknowledged under it.
	holdUntil := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(clusterWait)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("no %s within %s", what, clusterWait)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	acked := func() int64 { return w.stats[0].Load() + w.stats[1].Load() }
	progress := func(when string) {
		t.Helper()
		want := acked() + 10
		holdUntil("progress "+when, func() bool { return acked() >= want })
	}
	leaderOtherThan := func(old *Store) func() bool {
		return func() bool {
			for _, s := range c.Running() {
				if s != old && s.IsLeader() {
					return true
				}
			}
			return false
		}
	}
	progress("before the faults")
	for round := range 3 {
		l := c.Leader()
		c.Partition(l.ID()) // the leader alone in the minority
		holdUntil("leader in the majority", leaderOtherThan(l))
		progress("with the old leader cut off")
		c.Heal()
		progress("after the heal")
		c.Partition(c.Followers()[round%2].ID())
		progress("with a follower cut off")
		c.Heal()
		progress("after the heal")
		l = c.Leader()
		c.Stop(l.ID()) // crash the leader
		holdUntil("leader after the crash", leaderOtherThan(l))
		progress("with the leader down")
		c.Restart(l.ID())
		progress("after the restart")
	}
	stop()
	c.Heal()
	c.EnsureSame(t)
	res, info := w.check(t)
	switch res {
	case porcupine.Ok:
	case porcupine.Unknown:
		t.Logf("porcupine timed out; the history is neither proven nor refuted")
	default:
		path := filepath.Join(os.TempDir(), fmt.Sprintf("raftstore-linearizability-%d.html", time.Now().UnixNano()))
		if f, err := os.Create(path); err == nil {
			porcupine.Visualize(testsupport.RegisterModel, info, f)
			f.Close()
		}
		t.Fatalf("history is not linearizable; visualization in %s", path)
	}
}

// start runs n clients until the returned stop is called (stop waits for
// them; it may be called twice).
func (w *workload) start(n int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for id := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runClient(ctx, w, id)
		}()
	}
	return func() { cancel(); wg.Wait() }
}

func (w *workload) check(t *testing.T) (porcupine.CheckResult, porcupine.LinearizationInfo) {
	t.Helper()
	t.Logf("history: %d ops (%d acknowledged writes, %d reads, %d unknown-outcome writes)",
		len(w.h.ops), w.stats[0].Load(), w.stats[1].Load(), w.stats[2].Load())
	if w.stats[0].Load() == 0 || w.stats[1].Load() == 0 {
		t.Fatal("the workload made no progress")
	}
	return porcupine.CheckOperationsVerbose(testsupport.RegisterModel, w.h.ops, 15*time.Second)
}

// TestLinearizabilityCheckCatchesStaleReads is the control: reads from a
// follower's replica, without VerifyRead, are not linearizable, and the
// check must say so.
func TestLinearizabilityCheckCatchesStaleReads(t *testing.T) {
	if testing.Short() {
		t.Skip("linearizability check takes seconds")
	}
	c := MakeCluster(t, 3, 3)
	w := &workload{c: c, h: &history{start: time.Now()}, keys: []string{"k0"},
		readFrom: func(rng *rand.Rand) *Store {
			if l := currentLeader(c); l != nil {
				for _, s := range c.Running() {
					if s != l {
						return s
					}
				}
			}
			return nil
		}}
	stop := w.start(4)
	time.Sleep(1500 * time.Millisecond)
	stop()
	if res, _ := w.check(t); res != porcupine.Illegal {
		t.Fatalf("stale follower reads checked as %v, want Illegal", res)
	}
}
