package node

import (
	"context"
	"testing"
	"time"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/remotepolicy"
	"github.com/harn-dev/harn/node/tasks"
)

// BenchmarkTUIKeystrokeToSteer measures what the TUI's Enter costs until
// the owner has taken the steer (its answer is back at the TUI): the
// steer task action, as harn chat and harn attach send it, to a harn
// session whose turn is running (the scripted model holds its
// generation), on a two-node mesh with mutual TLS:
//
//   - local: given to the owner's local service (harn chat on the owner);
//   - remote: given to the other node's local service, routed over the
//     cluster gRPC to the owner (harn attach on the other node);
//   - rtt: a Pending call on the same cluster connection, interleaved
//     with both, so that the three are measured under the same load.
func BenchmarkTUIKeystrokeToSteer(b *testing.B) {
	if testing.Short() {
		b.Skip("starts a two-node TLS mesh; skipped under -short")
	}
	const ownerName, callerName = "tw0", "tw1"
	ws := remotepolicy.Resolve(b.TempDir()) // where the caller may steer a session
	tm, _ := startTrustMeshWith(b, func(cfg *Config) {
		if cfg.Name == ownerName {
			cfg.Cluster.RemoteControl = callerName
			cfg.Remote.Workspaces = []string{ws}
		}
	})
	f := &fbMesh{owner: tm.nodes[0]}
	f.caller = tm.join(callerName, tm.token(false, 0, 0), false)
	f.ownerCl, f.callerCl = dialLocal(b, f.owner), dialLocal(b, f.caller)
	hold := make(chan struct{})
	held := modeltest.Text("held")
	held.Hold = hold
	m := modeltest.New(b, held)
	b.Cleanup(func() { close(hold) })
	r, err := f.owner.Tasks().Do(tasks.Action{Op: tasks.OpStart, Agent: tasks.AgentHarn, Text: "work", Workdir: ws,
		Harn: &tasks.HarnOptions{URL: m.URL(), Model: "test-model", Key: "k"}})
	if err != nil {
		b.Fatal(err)
	}
	session, task := r.Session, r.Task.ID
	mesh.WaitFor(b, fbWait, "the model call is held", func() bool { return len(m.Requests()) == 1 })
	mesh.WaitFor(b, fbWait, "the caller routes to the owner", func() bool {
		rec, ok := f.caller.cl.Registry().Get(session)
		_, cerr := f.caller.cl.ClientOf(ownerName)
		return ok && rec.Node == ownerName && cerr == nil
	})
	if f.peer, err = f.caller.cl.ClientOf(ownerName); err != nil {
		b.Fatal(err)
	}
	steer := func(cl *api.Client) time.Duration {
		ctx, cancel := context.WithTimeout(context.Background(), fbWait)
		defer cancel()
		t0 := time.Now()
		res, err := cl.Task(ctx, &api.TaskRequest{Node: ownerName, Action: tasks.ActionToAPI(tasks.Action{Op: tasks.OpSteer, Session: session, Task: task, Text: "look left"})})
		d := time.Since(t0)
		if err != nil || res.GetResult().GetSteer().GetMode() != "delivered" {
			b.Fatalf("steer: %v %v", res, err)
		}
		return d
	}
	var local, remote, rtts []time.Duration
	round := func(i int, record bool) {
		steps := []func(){
			func() { d := steer(f.ownerCl); local = append(local, d) },
			func() { d := steer(f.callerCl); remote = append(remote, d) },
			func() { d := f.rtt(b); rtts = append(rtts, d) },
		}
		for k := range steps {
			steps[(i+k)%len(steps)]()
		}
		if !record {
			local, remote, rtts = local[:0], remote[:0], rtts[:0]
		}
	}
	for i := range 5 {
		round(i, false)
	}
	b.ResetTimer()
	for i := range b.N {
		round(i, true)
	}
	b.StopTimer()
	b.ReportMetric(msOf(fbPct(local, 50)), "local-p50-ms")
	b.ReportMetric(msOf(fbPct(local, 99)), "local-p99-ms")
	b.ReportMetric(msOf(fbPct(remote, 50)), "remote-p50-ms")
	b.ReportMetric(msOf(fbPct(remote, 99)), "remote-p99-ms")
	b.ReportMetric(msOf(fbPct(rtts, 50)), "rtt-p50-ms")
	b.ReportMetric(msOf(fbPct(remote, 50)-fbPct(local, 50)), "remote-minus-local-p50-ms")
	b.ReportMetric(0, "ns/op")
}
