package cluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/harn-dev/harn/raftstore"
)

// What the simulation measures, within a wall-clock budget per run: a run
// that runs out of it stops where it is, closes its nodes, and reports
// the figures it has and where it stopped.

// sent is the bytes every node sent so far.
func (s *sim) sent() int64 {
	var t int64
	for _, nd := range s.nodes {
		t += nd.tr.SentBytes()
	}
	return t
}

// left is the time until the run's deadline, less a margin to close.
func (s *sim) left() time.Duration {
	return time.Until(s.deadline) //clock:real the budget is wall time
}

// simResult is what one run of the simulation measured.
type simResult struct {
	nodes                          int
	propP50, propP99, propAll      time.Duration // per-node arrival of a presence change; the last node's
	propRounds                     int           // rounds timed
	regP50, regP99                 time.Duration // per-node arrival of a registry write in the mirrors
	regRounds                      int
	healConverge                   time.Duration // partition healed → every node holds every change
	idleBytes, busyBytes, perDelta float64       // bytes per node per second idle, busy; per node per change
	idleDone, busyDone, healDone   bool
	misses                         int // rounds some node missed within the bound
	pulls                          int64
	took                           time.Duration // the run's wall time, joins to close
	cpu                            time.Duration // the CPU time the process used meanwhile
	timedOut                       string        // where the budget ran out; "" when it did not
	load                           string        // the load average at the end
}

// propagate times rounds presence changes from random nodes, one at a
// time, until every other node holds each (bounded); it stops early at
// the deadline and says how many rounds it timed.
func (s *sim) propagate(rounds int, bound time.Duration) (p50, p99, all time.Duration, misses, done int) {
	var lat, alls []time.Duration
	for ; done < rounds && s.left() > bound; done++ {
		o := s.nodes[rand.IntN(len(s.nodes))]
		r := &simRound{key: o.state.SessionID, start: time.Now(), at: make([]atomic.Int64, len(s.nodes))} //clock:real
		r.version = o.pub.NextVersion()                                                                   // the change's version is later
		s.round.Store(r)
		o.change()
		deadline := time.Now().Add(bound) //clock:real
		for r.arrived.Load() < int64(len(s.nodes)-1) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		s.round.Store(nil)
		var last time.Duration
		for i := range r.at {
			if i == o.i {
				continue
			}
			d := time.Duration(r.at[i].Load())
			if d == 0 {
				d = bound
			}
			lat = append(lat, d)
			last = max(last, d)
		}
		if r.arrived.Load() < int64(len(s.nodes)-1) {
			misses++
		}
		alls = append(alls, last)
		time.Sleep(time.Duration(50+rand.IntN(200)) * time.Millisecond)
	}
	slices.Sort(lat)
	slices.Sort(alls)
	return pct(lat, 50), pct(lat, 99), pct(alls, 50), misses, done
}

// apply writes cmd through the registry's leader (bounded by ctx).
func (s *sim) apply(ctx context.Context, cmd raftstore.Command) (uint64, error) {
	for {
		for _, st := range s.servers.Stores {
			if st != nil && st.IsLeader() {
				if idx, err := st.Apply(ctx, cmd); err == nil {
					return idx, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// registry times writes through the leader until every mirror holds them;
// it stops early at the deadline and says how many writes it timed.
func (s *sim) registry(rounds int, bound time.Duration) (p50, p99 time.Duration, done int) {
	var lat []time.Duration
	for ; done < rounds && s.left() > bound; done++ {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		start := time.Now() //clock:real
		idx, err := s.apply(ctx, raftstore.UpsertCommand(raftstore.Upsert{SessionID: fmt.Sprintf("reg-%d", done), TS: start,
			Identity: &raftstore.IdentityPatch{Node: s.nodes[done%len(s.nodes)].name}}))
		if err != nil {
			cancel()
			break
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, nd := range s.nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if nd.mirror.WaitForApplied(ctx, idx) == nil {
					d := time.Since(start) //clock:real
					mu.Lock()
					lat = append(lat, d)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		cancel()
	}
	slices.Sort(lat)
	return pct(lat, 50), pct(lat, 99), done
}

// heal partitions the mesh in two for hold, changes k nodes' presence on
// each side meanwhile, heals it, and times until every node holds every
// change (bounded).
func (s *sim) heal(k int, hold, bound time.Duration) time.Duration {
	half := len(s.nodes) / 2
	var a, b []string
	for i, nd := range s.nodes {
		if i < half {
			a = append(a, nd.tr.Addr())
		} else {
			b = append(b, nd.tr.Addr())
		}
	}
	s.net.Partition(a, b)
	type change struct {
		node *simNode
		v    uint64
	}
	var changes []change
	for range k {
		for _, nd := range []*simNode{s.nodes[rand.IntN(half)], s.nodes[half+rand.IntN(len(s.nodes)-half)]} {
			changes = append(changes, change{nd, nd.change()})
		}
	}
	time.Sleep(hold)
	start := time.Now() //clock:real
	s.net.Heal()
	deadline := start.Add(bound)
	for {
		done := true
		for _, c := range changes {
			for _, nd := range s.nodes {
				if nd != c.node && nd.table.Version(c.node.name, c.node.state.SessionID) < c.v {
					done = false
					break
				}
			}
			if !done {
				break
			}
		}
		if done {
			return time.Since(start) //clock:real
		}
		if time.Now().After(deadline) { //clock:real
			return bound
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// bytesPerNode is the bytes each node sent per second over d, while load
// runs (nil: idle).
func (s *sim) bytesPerNode(d time.Duration, load func(stop <-chan struct{})) float64 {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	if load != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			load(stop)
		}()
	}
	s.net.Meter(true)
	b0, t0 := s.sent(), time.Now()
	time.Sleep(d)
	b1, t1 := s.sent(), time.Now()
	s.net.Meter(false)
	close(stop)
	wg.Wait()
	return float64(b1-b0) / t1.Sub(t0).Seconds() / float64(len(s.nodes))
}

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, len(sorted)*p/100)]
}

// simBudget is the wall time a run at n nodes may take, joins to close:
// HARN_SIM_BUDGET (a duration) when set, else 2 minutes up to 20 nodes,
// 5 up to 200, and 11 beyond.
func simBudget(n int) time.Duration {
	if d, err := time.ParseDuration(os.Getenv("HARN_SIM_BUDGET")); err == nil && d > 0 {
		return d
	}
	switch {
	case n <= 20:
		return 2 * time.Minute
	case n <= 200:
		return 5 * time.Minute
	}
	return 11 * time.Minute
}

// simGOGC is the collector's GOGC during a run (see runSim).
const simGOGC = 400

// processCPU is the CPU time this process used so far, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// simCloseMargin is the part of the budget kept to close the nodes.
const simCloseMargin = 30 * time.Second

// runSim runs the whole simulation at n nodes within budget; quick
// shortens its waits and windows (make test's small run). When the budget
// runs out it returns what it measured, with timedOut naming the phase.
func runSim(tb testing.TB, n, rounds int, quick bool, budget time.Duration) (r simResult) {
	// A thousand nodes in one process make garbage fast (every packet
	// decoded, every message a fresh struct), and each of the collector's
	// cycles marks every node's state: a higher GOGC spaces them. What
	// each node does is unchanged.
	defer debug.SetGCPercent(debug.SetGCPercent(simGOGC))
	begin := time.Now() //clock:real the budget is wall time
	cpu0 := processCPU()
	r = simResult{nodes: n}
	s, where := startSim(tb, n, begin.Add(budget-simCloseMargin))
	defer func() {
		s.close()
		r.pulls, r.took, r.load = s.pulls.Load(), time.Since(begin), loadAverage() //clock:real
		r.cpu = processCPU() - cpu0
	}()
	if where != "" {
		r.timedOut = where
		return r
	}
	// Let the joins' last gossip settle.
	settle, window, hold := 10*time.Second, 10*time.Second, 5*time.Second
	if quick {
		settle, window, hold = time.Second, time.Second, time.Second
	}
	const propBound, regBound, healBound = 10 * time.Second, 30 * time.Second, 60 * time.Second
	if s.left() < settle+window {
		r.timedOut = "settling"
		return r
	}
	time.Sleep(settle)
	r.idleBytes, r.idleDone = s.bytesPerNode(window, nil), true
	r.propP50, r.propP99, r.propAll, r.misses, r.propRounds = s.propagate(rounds, propBound)
	if r.propRounds < rounds {
		r.timedOut = fmt.Sprintf("presence (%d of %d rounds)", r.propRounds, rounds)
		return r
	}
	r.regP50, r.regP99, r.regRounds = s.registry(10, regBound)
	if r.regRounds < 10 {
		r.timedOut = fmt.Sprintf("registry (%d of 10 writes)", r.regRounds)
		return r
	}
	if s.left() < window {
		r.timedOut = "bytes with changes"
		return r
	}
	// Busy: one change a second somewhere in the mesh.
	const rate = 1.0
	r.busyBytes = s.bytesPerNode(window, func(stop <-chan struct{}) {
		t := time.NewTicker(time.Duration(float64(time.Second) / rate))
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				s.nodes[rand.IntN(n)].change()
			}
		}
	})
	r.busyDone, r.perDelta = true, (r.busyBytes-r.idleBytes)/rate
	if s.left() < hold+healBound/4 {
		r.timedOut = "heal"
		return r
	}
	r.healConverge, r.healDone = s.heal(3, hold, min(healBound, s.left()-hold)), true
	return r
}

func (r simResult) String() string {
	return fmt.Sprintf("%5d nodes: presence p50 %v p99 %v (all %v, %d misses, %d rounds); registry p50 %v p99 %v (%d writes); heal %v; bytes/node/s idle %.0f busy %.0f (+%.0f per change/s); pulls %d; took %v (CPU %v), load %s%s",
		r.nodes, r.propP50.Round(time.Millisecond), r.propP99.Round(time.Millisecond), r.propAll.Round(time.Millisecond), r.misses, r.propRounds,
		r.regP50.Round(time.Millisecond), r.regP99.Round(time.Millisecond), r.regRounds, r.healConverge.Round(time.Millisecond),
		r.idleBytes, r.busyBytes, r.perDelta, r.pulls, r.took.Round(time.Second), r.cpu.Round(100*time.Millisecond), r.load, r.note())
}

func (r simResult) note() string {
	if r.timedOut == "" {
		return ""
	}
	return " (timed out at " + r.timedOut + ")"
}

// simHeader heads the simulation's table (docs/perf-mesh.md, "The
// simulation").
const simHeader = "| nodes | presence p50 / p99 (all) | misses | registry p50 / p99 | heal | bytes/node/s at rest | with 1 change/s | load | run |\n" +
	"| --- | --- | --- | --- | --- | --- | --- | --- | --- |"

// row is r as a row of the simulation's table: a phase the run did not
// reach reads "—", and the last cell says how long the run took or where
// it timed out.
func (r simResult) row() string {
	dash := "—"
	prop, misses, reg, heal, idle, busy := dash, dash, dash, dash, dash, dash
	if r.propRounds > 0 {
		prop = fmt.Sprintf("%s / %s ms (%s ms)", msOf(r.propP50), msOf(r.propP99), msOf(r.propAll))
		misses = strconv.Itoa(r.misses)
	}
	if r.regRounds > 0 {
		reg = fmt.Sprintf("%s / %s ms", msOf(r.regP50), msOf(r.regP99))
	}
	if r.healDone {
		heal = fmt.Sprintf("%.2g s", r.healConverge.Seconds())
		if r.healConverge >= 10*time.Second {
			heal = fmt.Sprintf("%.0f s", r.healConverge.Seconds())
		}
	}
	if r.idleDone {
		idle = thousands(r.idleBytes)
	}
	if r.busyDone {
		busy = thousands(r.busyBytes)
	}
	run := r.took.Round(time.Second).String()
	if r.timedOut != "" {
		run = fmt.Sprintf("(timed out at %s, after %v)", r.timedOut, r.took.Round(time.Second))
	}
	return fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s | %s | %s |",
		thousands(float64(r.nodes)), prop, misses, reg, heal, idle, busy, r.load, run)
}

// msOf is d in milliseconds: one decimal under 10 ms, whole above.
func msOf(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	if ms < 10 {
		return strconv.FormatFloat(ms, 'f', 1, 64)
	}
	return thousands(ms)
}

// thousands is v rounded, with commas between thousands.
func thousands(v float64) string {
	s := strconv.FormatInt(int64(v+0.5), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// loadAverage is the machine's load average over 1, 5 and 15 minutes
// ("?" when unreadable): the load a figure ran under.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}

// TestMeshSimulation runs the simulation at 10 nodes (HARN_SIM_NODES sets
// another size, e.g. 1000, and HARN_SIM_BUDGET its wall-clock budget):
// every change reaches every node, every registry write every mirror, and
// a healed partition converges, within the budget.
func TestMeshSimulation(t *testing.T) {
	if testing.Short() {
		t.Skip("the simulation takes about a minute")
	}
	n := 10
	if v, err := strconv.Atoi(os.Getenv("HARN_SIM_NODES")); err == nil && v > 1 {
		n = v
	}
	r := runSim(t, n, 10, n <= 20, simBudget(n))
	t.Log(r)
	t.Log(r.row())
	if r.timedOut != "" {
		t.Fatalf("the simulation did not finish within %v: %v", simBudget(n), r)
	}
	if r.misses > 0 || r.healConverge >= 60*time.Second || r.regP99 == 0 {
		t.Fatalf("the simulation did not converge: %v", r)
	}
}

// BenchmarkMeshSimulation runs the simulation at 10, 100 and 1,000 nodes,
// each within its budget (simBudget), and prints its table on stdout
// (make bench): a run that runs out of budget prints the figures it has
// and where it stopped.
func BenchmarkMeshSimulation(b *testing.B) {
	fmt.Println(simHeader)
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			r := runSim(b, n, 20, false, simBudget(n))
			b.ReportMetric(float64(r.propP50.Microseconds())/1000, "prop_p50_ms")
			b.ReportMetric(float64(r.propP99.Microseconds())/1000, "prop_p99_ms")
			b.ReportMetric(float64(r.regP50.Microseconds())/1000, "reg_p50_ms")
			b.ReportMetric(float64(r.regP99.Microseconds())/1000, "reg_p99_ms")
			b.ReportMetric(r.healConverge.Seconds(), "heal_s")
			b.ReportMetric(r.idleBytes, "idle_B/node/s")
			b.ReportMetric(r.busyBytes, "busy_B/node/s")
			b.ReportMetric(float64(r.misses), "misses")
			b.Log(r)
			fmt.Println(r.row())
		})
	}
}
