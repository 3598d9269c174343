package node

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/apigrpc"
	"github.com/harn-dev/harn/node/remotepolicy"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/runtime"
	rexec "github.com/harn-dev/harn/runtime/exec"
)

// fbWait bounds every wait of the first-byte benchmark (a first byte, a
// task's end, a mesh condition).
const fbWait = 30 * time.Second

// fbMesh is the first-byte benchmark's mesh: owner (B, the first server)
// hosts a runtime session running the fake agent and allows caller (A, a
// client node) remote control; both are reached through their local
// sockets, as `harn task start` reaches them.
type fbMesh struct {
	owner, caller     *Node
	ownerCl, callerCl *api.Client
	// peer is caller's cluster client of owner: the mutually
	// authenticated connection that routed task actions take.
	peer    apigrpc.ClusterClient
	session string
	fb      chan rexec.FirstByte
}

// BenchmarkTaskStartToFirstByte measures a task's start to its executor's
// first byte of agent output, in one run, on a two-node mesh with mutual
// TLS (mesh init and a join token) whose owner node runs the fake agent
// (runtime/exec/testdata/fakeagent, as `claude -p --output-format
// stream-json`) in one runtime session, one task after another:
//
//   - local: the start given to the owner's local service over its unix
//     socket (`harn task start --session ID` on the owner);
//   - remote: the same start given to the other node's local service,
//     which routes it over the cluster gRPC to the owner (`harn task start
//     --session ID` on the other node). Each round also makes a local start
//     and a cluster round trip (a Pending call on the same connection),
//     interleaved, so that the three are measured under the same load.
//
// The first byte is observed on the owner (Config.OnTaskFirstByte); the
// time is from the start call to the executor's reading of that byte.
// remote reports target-ms = local p50 + 2 RTT p50 + 5 ms, the target for
// its p50, from its own interleaved local and RTT samples.
func BenchmarkTaskStartToFirstByte(b *testing.B) {
	if testing.Short() {
		b.Skip("starts a two-node TLS mesh and spawns an agent per task; skipped under -short")
	}
	f := startFBMesh(b)
	b.Run("local", f.benchLocal)
	b.Run("remote", f.benchRemote)
}

// buildFakeClaude builds the fake agent as a program named claude, so that
// the Claude Code stream driver runs it; it skips b when the build fails.
func buildFakeClaude(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "claude")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/harn-dev/harn/runtime/exec/testdata/fakeagent").CombinedOutput()
	if err != nil {
		b.Skipf("skipping: cannot build the fake agent: %v\n%s", err, out)
	}
	return bin
}

// startFBMesh starts the mesh, opens the runtime session on the owner and
// waits until the caller can route to it.
func startFBMesh(b *testing.B) *fbMesh {
	b.Helper()
	agent := buildFakeClaude(b)
	f := &fbMesh{fb: make(chan rexec.FirstByte, 4)}
	const ownerName, callerName = "tw0", "tw1"
	ws := remotepolicy.Resolve(b.TempDir()) // where the caller's tasks may run
	tm, _ := startTrustMeshWith(b, func(cfg *Config) {
		if cfg.Name == ownerName {
			// Only the caller may act on the owner's runtimes.
			cfg.Cluster.RemoteControl = callerName
			cfg.Remote.Workspaces = []string{ws}
			cfg.OnTaskFirstByte = func(x rexec.FirstByte) { f.fb <- x }
		}
	})
	f.owner = tm.nodes[0]
	f.caller = tm.join(callerName, tm.token(false, 0, 0), false)
	f.ownerCl, f.callerCl = dialLocal(b, f.owner), dialLocal(b, f.caller)

	sid, err := f.owner.Tasks().OpenExec(agent+" -p --output-format stream-json", ws)
	if err != nil {
		b.Fatal(err)
	}
	f.session = sid
	// The caller routes by its replica of the registry, over its cached
	// connection to the owner.
	mesh.WaitFor(b, fbWait, "the caller's registry replica holds the owner's runtime session", func() bool {
		r, ok := f.caller.cl.Registry().Get(sid)
		return ok && r.Node == ownerName
	})
	mesh.WaitFor(b, fbWait, "the caller knows the owner's rpc address", func() bool {
		_, err := f.caller.cl.ClientOf(ownerName)
		return err == nil
	})
	if f.peer, err = f.caller.cl.ClientOf(ownerName); err != nil {
		b.Fatal(err)
	}
	return f
}

// dialLocal is a client of n's local service over its unix socket.
func dialLocal(b *testing.B, n *Node) *api.Client { return dialClient(b, n.cfg.Socket) }

// start gives a start on the runtime session to cl (a node's local
// service), waits for the owner's executor's first byte of that task and
// for the task's end, and returns the start→first byte time and the
// executor's own taken→first byte time.
func (f *fbMesh) start(b *testing.B, cl *api.Client) (wall, taken time.Duration) {
	b.Helper()
	act := tasks.ActionToAPI(tasks.Action{Op: tasks.OpStart, Session: f.session, Text: "hello"})
	ctx, cancel := context.WithTimeout(context.Background(), fbWait)
	defer cancel()
	t0 := time.Now()
	res, err := cl.Task(ctx, &api.TaskRequest{Action: act})
	if err != nil {
		b.Fatal(err)
	}
	r, err := tasks.ResultFromAPI(res.Result)
	if err != nil {
		b.Fatal(err)
	}
	if r.Task == nil || res.Node != f.owner.Name() {
		b.Fatalf("start answered by %q with %+v, want a task on %s", res.Node, r, f.owner.Name())
	}
	var x rexec.FirstByte
	select {
	case x = <-f.fb:
	case <-ctx.Done():
		v, err := f.owner.Tasks().Runtime().Task(r.Task.ID)
		sv, _ := f.owner.Tasks().Runtime().Session(f.session)
		b.Fatalf("no first byte of task %s within %v: %+v (%v); session %+v", r.Task.ID, fbWait, v, err, sv)
	}
	if x.Task != r.Task.ID {
		b.Fatalf("first byte of task %s, want %s", x.Task, r.Task.ID)
	}
	// The next start must not queue behind this task.
	rt := f.owner.Tasks().Runtime()
	for {
		v, err := rt.Task(r.Task.ID)
		if err != nil {
			b.Fatal(err)
		}
		if v.State == runtime.StateTerminal {
			if v.Status != runtime.StatusSucceeded {
				b.Fatalf("task %s ended %s", v.ID, v.Status)
			}
			break
		}
		if ctx.Err() != nil {
			b.Fatalf("task %s did not end within %v (state %s)", v.ID, fbWait, v.State)
		}
		time.Sleep(time.Millisecond)
	}
	return x.At.Sub(t0), x.Since
}

// rtt is one Pending call from the caller to the owner on the cluster
// connection that routed starts take (the owner has no open requests, so
// it answers an empty list).
func (f *fbMesh) rtt(b *testing.B) time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), fbWait)
	defer cancel()
	t0 := time.Now()
	if _, err := f.peer.Pending(ctx, &api.PendingRequest{}); err != nil {
		b.Fatal(err)
	}
	return time.Since(t0)
}

func (f *fbMesh) benchLocal(b *testing.B) {
	for range 3 { // warm the page cache and the connections
		f.start(b, f.ownerCl)
	}
	var wall, taken []time.Duration
	b.ResetTimer()
	for range b.N {
		w, t := f.start(b, f.ownerCl)
		wall, taken = append(wall, w), append(taken, t)
	}
	b.StopTimer()
	reportFB(b, wall, taken)
}

func (f *fbMesh) benchRemote(b *testing.B) {
	var wall, taken, local, rtts []time.Duration
	round := func(i int, record bool) {
		steps := []func(){
			func() {
				w, t := f.start(b, f.callerCl)
				if record {
					wall, taken = append(wall, w), append(taken, t)
				}
			},
			func() {
				w, _ := f.start(b, f.ownerCl)
				if record {
					local = append(local, w)
				}
			},
			func() {
				d := f.rtt(b)
				if record {
					rtts = append(rtts, d)
				}
			},
		}
		for k := range steps {
			steps[(i+k)%len(steps)]()
		}
	}
	for i := range 3 {
		round(i, false)
	}
	b.ResetTimer()
	for i := range b.N {
		round(i, true)
	}
	b.StopTimer()
	reportFB(b, wall, taken)
	lp50, rp50, wp50 := fbPct(local, 50), fbPct(rtts, 50), fbPct(wall, 50)
	target := lp50 + 2*rp50 + 5*time.Millisecond
	b.ReportMetric(msOf(lp50), "local-start-fb-p50-ms")
	b.ReportMetric(msOf(rp50), "rtt-p50-ms")
	b.ReportMetric(msOf(target), "target-ms")
	b.ReportMetric(msOf(wp50-lp50), "remote-minus-local-p50-ms")
	// A round is a remote start, a local start and a round trip: its
	// time per op says nothing of one of them.
	b.ReportMetric(0, "ns/op")
}

// reportFB reports the start→first byte and taken→first byte p50 and p99.
func reportFB(b *testing.B, wall, taken []time.Duration) {
	b.ReportMetric(msOf(fbPct(wall, 50)), "start-fb-p50-ms")
	b.ReportMetric(msOf(fbPct(wall, 99)), "start-fb-p99-ms")
	b.ReportMetric(msOf(fbPct(taken, 50)), "taken-fb-p50-ms")
	b.ReportMetric(msOf(fbPct(taken, 99)), "taken-fb-p99-ms")
}

// fbPct is the p-th percentile (nearest rank) of ds, as the node/tasks
// benchmark computes it.
func fbPct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p/100*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}
