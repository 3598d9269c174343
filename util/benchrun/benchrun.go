// Package benchrun runs a harn benchmark beside its bare-library
// counterpart in the same run: both sides do b.N operations in alternating
// chunks (the side that goes first alternates too), so that drift in the
// machine (fsync rate, other load) hits both alike, and the ratio is what
// the benchmark reports.
package benchrun

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harn-dev/harn/util/ids"
)

// Side is one contender. Op(w) performs one operation as writer w;
// writers never share a w at the same time.
type Side struct {
	Name string
	Op   func(w int) error
	el   time.Duration
	n    int
}

// RunChunk runs k operations over writers goroutines and returns the wall
// time and the first error.
func RunChunk(writers, k int, op func(w int) error) (time.Duration, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	start := time.Now()
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for next.Add(1) <= int64(k) {
				if err := op(w); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	el := time.Since(start)
	if err, _ := firstErr.Load().(error); err != nil {
		return el, err
	}
	return el, nil
}

// Interleave runs b.N operations on each side in alternating chunks and
// reports <side>-events/s for both and the ratio a/bare. perOp is the
// number of events one operation stores.
func Interleave(b *testing.B, writers, perOp int, a, bare *Side) {
	b.Helper()
	chunk := max(256, 16*writers)
	b.ResetTimer()
	for done, round := 0, 0; done < b.N; round++ {
		k := min(chunk, b.N-done)
		order := []*Side{a, bare}
		if round%2 == 1 {
			order = []*Side{bare, a}
		}
		for _, s := range order {
			el, err := RunChunk(writers, k, s.Op)
			if err != nil {
				b.Fatalf("%s: %v", s.Name, err)
			}
			s.el += el
			s.n += k
		}
		done += k
	}
	b.StopTimer()
	ra := float64(a.n*perOp) / a.el.Seconds()
	rb := float64(bare.n*perOp) / bare.el.Seconds()
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ra, a.Name+"-events/s")
	b.ReportMetric(rb, bare.Name+"-events/s")
	b.ReportMetric(ra/rb, a.Name+"/"+bare.Name)
}

// Session is the session id of writer w: Claude Code's UUID shape.
func Session(w int) string {
	return fmt.Sprintf("8a1f0c2e-5b7d-4e21-9c3a-%012d", w)
}

// IDGen makes unique, time-ordered event ids without the process-wide
// lock of ids.New: a ULID per writer as a prefix, then a counter.
type IDGen struct {
	base string
	n    uint64
}

// NewIDGen returns a generator with a fresh ULID prefix.
func NewIDGen() *IDGen { return &IDGen{base: ids.New(time.Now())} }

// Next returns the next id.
func (g *IDGen) Next() string {
	g.n++
	return g.base + strconv.FormatUint(g.n, 36)
}
