package e2e

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The mesh at scale, with real processes: a mesh of one server and n-1
// other nodes (harn node, the default LAN timers and mutual TLS, every
// node joined with one token), beside n bare memberlist processes
// (internal/testsupport/barelist) with the same gossip settings and key,
// measured in the same run. HARN_SCALE=1 runs the acceptance tests (20
// and 50 nodes, a few minutes); make bench runs the benchmarks.

// scaleProc is one process of a scale run.
type scaleProc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

func (p *scaleProc) pid() int { return p.cmd.Process.Pid }

// stop sends SIGTERM and waits (then SIGKILL) for the process.
func (p *scaleProc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// scaleNode is one harn node of a scale run.
type scaleNode struct {
	scaleProc
	dir, sock, xdg string
	gossip, rpc    int
}

// environ is the environment harn commands run with against this node.
func (n *scaleNode) environ() []string {
	return append(cleanEnv(n.dir), "HARN_DATA_DIR="+filepath.Join(n.dir, "data"), "HARN_SOCKET="+n.sock,
		"HARN_MESH_PROFILE=lan", "HARN_RAFT_PROFILE=lan")
}

// scaleMesh is a scale run's processes.
type scaleMesh struct {
	tb    testing.TB
	nodes []*scaleNode // nodes[0] is the server
	bare  []*scaleProc
	key   string
}

var (
	bareOnce sync.Once
	bareBin  string
	bareErr  error
)

// barelist builds internal/testsupport/barelist once.
func barelist(tb testing.TB) string {
	tb.Helper()
	bareOnce.Do(func() {
		dir, err := os.MkdirTemp("", "harn-barelist-")
		if err != nil {
			bareErr = err
			return
		}
		goTool, err := exec.LookPath("go")
		if err != nil {
			goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, goTool, "build", "-trimpath", "-ldflags", "-s -w", "-o", dir+string(filepath.Separator),
			"github.com/harn-dev/harn/internal/testsupport/barelist").CombinedOutput()
		if err != nil {
			bareErr = fmt.Errorf("go build barelist: %v: %s", err, out)
			return
		}
		bareBin = filepath.Join(dir, "barelist")
	})
	if bareErr != nil {
		tb.Fatal(bareErr)
	}
	return bareBin
}

// spawnScale starts a process of a scale run, logging to a file.
func spawnScale(tb testing.TB, name, dir string, environ []string, bin string, args ...string) scaleProc {
	tb.Helper()
	log := filepath.Join(dir, name+".log")
	f, err := os.Create(log)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = environ, f, f
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	p := scaleProc{name: name, cmd: cmd, done: make(chan struct{}), log: log}
	go func() { cmd.Wait(); close(p.done) }()
	return p
}

// scalePorts picks free ports as freePorts does, for a testing.TB.
func scalePorts(tb testing.TB, n int) []int {
	tb.Helper()
	var out []int
	var closers []func()
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	for i := 0; i < 20*n+2000 && len(out) < n; i++ {
		port := 20000 + rand.IntN(12000)
		if slices.Contains(out, port) {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		closers = append(closers, func() { l.Close() })
		u, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		closers = append(closers, func() { u.Close() })
		out = append(out, port)
	}
	if len(out) < n {
		tb.Fatalf("found only %d free ports", len(out))
	}
	return out
}

// startScaleMesh starts n harn nodes (node 0 the server) and, with bare,
// as many bare memberlist processes, and waits until every harn node
// answers and lists n alive members.
func startScaleMesh(tb testing.TB, n int, bare bool) *scaleMesh {
	tb.Helper()
	base := tb.TempDir()
	m := &scaleMesh{tb: tb}
	tb.Cleanup(m.close)
	ports := scalePorts(tb, 4*n)
	for i := range n {
		name := fmt.Sprintf("s%02d", i)
		if i > 0 {
			name = fmt.Sprintf("n%02d", i)
		}
		dir := filepath.Join(base, name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			tb.Fatal(err)
		}
		sockDir, err := os.MkdirTemp("", "hs")
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { os.RemoveAll(sockDir) })
		m.nodes = append(m.nodes, &scaleNode{scaleProc: scaleProc{name: name}, dir: dir, sock: filepath.Join(sockDir, "s"),
			gossip: ports[3*i], rpc: ports[3*i+2]})
	}
	s0 := m.nodes[0]
	var init struct {
		JoinToken string `json:"join_token"`
	}
	r := run(tb, s0.environ(), "", "mesh", "init", "--name", s0.name, "--json")
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &init) != nil {
		tb.Fatalf("mesh init: %v", r)
	}
	args := func(nd *scaleNode, i int) []string {
		return []string{"node", "--name", nd.name, "--bind", "127.0.0.1", "--gossip-port", strconv.Itoa(nd.gossip),
			"--raft-port", strconv.Itoa(ports[3*i+1]), "--rpc-port", strconv.Itoa(nd.rpc), "--http-port", "0"}
	}
	s0.scaleProc = spawnScale(tb, s0.name, s0.dir, s0.environ(), harnBin, append(args(s0, 0), "--server")...)
	m.waitReady(s0)
	var tok struct {
		JoinToken string `json:"join_token"`
	}
	r = run(tb, s0.environ(), "", "token", "create", "--uses", strconv.Itoa(n), "--json")
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &tok) != nil {
		tb.Fatalf("token create: %v", r)
	}
	join := net.JoinHostPort("127.0.0.1", strconv.Itoa(s0.gossip))
	joinRPC := net.JoinHostPort("127.0.0.1", strconv.Itoa(s0.rpc))
	// The nodes start in batches, each answering before the next starts:
	// a hundred joins at once on this machine's two cores outlast a
	// node's join deadline at the server, and the node exits.
	const batch = 10
	for lo := 1; lo < n; lo += batch {
		for i := lo; i < min(lo+batch, n); i++ {
			nd := m.nodes[i]
			nd.scaleProc = spawnScale(tb, nd.name, nd.dir, nd.environ(), harnBin,
				append(args(nd, i), "--join", join, "--join-rpc", joinRPC, "--join-token", tok.JoinToken)...)
		}
		for _, nd := range m.nodes[lo:min(lo+batch, n)] {
			m.waitReady(nd)
		}
	}
	m.waitMembers(n)
	if bare {
		key, err := os.ReadFile(filepath.Join(s0.dir, "data", "tls", "keyring.json"))
		if err != nil {
			tb.Fatal(err)
		}
		var ring struct {
			Primary []byte `json:"primary"`
		}
		if err := json.Unmarshal(key, &ring); err != nil {
			tb.Fatal(err)
		}
		m.startBare(n, ports[3*n:], ring.Primary)
	}
	return m
}

// startBare starts n bare memberlist processes with the gossip key.
func (m *scaleMesh) startBare(n int, ports []int, key []byte) {
	tb := m.tb
	bin := barelist(tb)
	dir := tb.TempDir()
	k := base64.StdEncoding.EncodeToString(key)
	seed := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	for i := range n {
		a := []string{"-name", fmt.Sprintf("b%02d", i), "-bind", "127.0.0.1", "-port", strconv.Itoa(ports[i]), "-key", k, "-profile", "lan"}
		if i > 0 {
			a = append(a, "-join", seed)
		}
		p := spawnScale(tb, fmt.Sprintf("b%02d", i), dir, os.Environ(), bin, a...)
		m.bare = append(m.bare, &p)
		// Wait for its "ready" line, so that the next one can join.
		for j := 0; ; j++ {
			b, _ := os.ReadFile(p.log)
			if strings.HasPrefix(string(b), "ready ") {
				break
			}
			if j > 1000 {
				tb.Fatalf("bare %d did not start: %s", i, b)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// waitReady waits until nd answers on its socket (bounded).
func (m *scaleMesh) waitReady(nd *scaleNode) {
	m.tb.Helper()
	for i := 0; ; i++ {
		select {
		case <-nd.done:
			b, _ := os.ReadFile(nd.log)
			m.tb.Fatalf("%s exited: %s", nd.name, b)
		default:
		}
		if st, ok := statusAt(m.tb, nd.environ(), nd.sock); ok && st.PID == nd.pid() {
			return
		}
		if i > 2400 {
			b, _ := os.ReadFile(nd.log)
			m.tb.Fatalf("%s did not answer within a minute: %s", nd.name, b)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// waitMembers waits until every node lists n alive members (bounded).
func (m *scaleMesh) waitMembers(n int) {
	m.tb.Helper()
	deadline := time.Now().Add(2*time.Minute + time.Duration(n)*time.Second)
	for _, nd := range m.nodes {
		for {
			r := run(m.tb, nd.environ(), "", "mesh", "members", "--json")
			var ms []memberJSON
			alive := 0
			if r.code == 0 && json.Unmarshal([]byte(r.stdout), &ms) == nil {
				for _, mb := range ms {
					if mb.Status == "alive" {
						alive++
					}
				}
			}
			if alive == n {
				break
			}
			if time.Now().After(deadline) {
				m.tb.Fatalf("%s lists %d of %d alive members", nd.name, alive, n)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

func (m *scaleMesh) close() {
	var wg sync.WaitGroup
	for _, nd := range m.nodes {
		if nd.cmd != nil {
			wg.Add(1)
			go func() { defer wg.Done(); nd.stop() }()
		}
	}
	for _, b := range m.bare {
		wg.Add(1)
		go func() { defer wg.Done(); b.stop() }()
	}
	wg.Wait()
}

// cpuTicks is a process's user and system CPU time, in clock ticks.
func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return u + st, nil
}

// memKiB is a process's resident memory, and its anonymous part, in KiB.
func memKiB(pid int) (rss, anon int64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(fs[1], 10, 64)
		switch fs[0] {
		case "Rss:":
			rss = v
		case "Anonymous:":
			anon = v
		}
	}
	return rss, anon
}

// clkTck is Linux's USER_HZ.
const clkTck = 100

// idleCPU is each process's CPU over window, in ms per second.
func idleCPU(tb testing.TB, pids []int, window time.Duration) []float64 {
	tb.Helper()
	before := make([]int64, len(pids))
	for i, p := range pids {
		t, err := cpuTicks(p)
		if err != nil {
			tb.Fatal(err)
		}
		before[i] = t
	}
	start := time.Now()
	time.Sleep(window)
	secs := time.Since(start).Seconds()
	out := make([]float64, len(pids))
	for i, p := range pids {
		t, err := cpuTicks(p)
		if err != nil {
			tb.Fatal(err)
		}
		out[i] = float64(t-before[i]) * 1000 / clkTck / secs
	}
	return out
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// idleFigures is one idle measurement of a scale mesh.
type idleFigures struct {
	nodes                      int
	server, node, bare         float64 // ms of CPU per second: the server, the median node, the median bare process
	nodeRSS, nodeAnon, bareRSS float64 // MiB, medians
	window                     time.Duration
	load                       string // the load average at the end of the window
}

func (f idleFigures) String() string {
	return fmt.Sprintf("%d nodes, idle %v: CPU ms/s server %.2f, median node %.2f, median bare memberlist %.2f (node/bare %.2f, server/node %.2f); RSS MiB median node %.1f (anonymous %.1f), bare %.1f; load %s",
		f.nodes, f.window, f.server, f.node, f.bare, f.node/f.bare, f.server/f.node, f.nodeRSS, f.nodeAnon, f.bareRSS, f.load)
}

// measureIdle waits settle, then measures every process over window.
func (m *scaleMesh) measureIdle(settle, window time.Duration) idleFigures {
	time.Sleep(settle)
	var pids []int
	for _, nd := range m.nodes {
		pids = append(pids, nd.pid())
	}
	for _, b := range m.bare {
		pids = append(pids, b.pid())
	}
	cpu := idleCPU(m.tb, pids, window)
	n := len(m.nodes)
	f := idleFigures{nodes: n, server: cpu[0], node: median(cpu[1:n]), bare: median(cpu[n:]), window: window, load: loadAverage()}
	var rss, anon, brss []float64
	for _, nd := range m.nodes[1:] {
		r, a := memKiB(nd.pid())
		rss, anon = append(rss, float64(r)/1024), append(anon, float64(a)/1024)
	}
	for _, b := range m.bare {
		r, _ := memKiB(b.pid())
		brss = append(brss, float64(r)/1024)
	}
	f.nodeRSS, f.nodeAnon, f.bareRSS = median(rss), median(anon), median(brss)
	return f
}

func scaleOn(tb testing.TB) {
	if os.Getenv("HARN_SCALE") == "" {
		tb.Skip("a scale test with real processes; HARN_SCALE=1 runs it")
	}
}

// TestIdleNodeCostsAboutWhatBareGossipCosts: with 20 real nodes (one
// server), the median non-server node's idle CPU over 60 s is at most 3
// times a bare memberlist process's with the same gossip settings,
// measured in the same run, and the server's at most 3 times the median
// node's.
func TestIdleNodeCostsAboutWhatBareGossipCosts(t *testing.T) {
	scaleOn(t)
	m := startScaleMesh(t, 20, true)
	f := m.measureIdle(30*time.Second, 60*time.Second)
	t.Log(f)
	if f.node > 3*f.bare {
		t.Errorf("a node's idle CPU is %.2f times a bare memberlist process's (want at most 3)", f.node/f.bare)
	}
	if f.server > 3*f.node {
		t.Errorf("the server's idle CPU is %.2f times the median node's (want at most 3)", f.server/f.node)
	}
}

// TestFiftyNodesSeeEachOthersSessionsWithin2s: with 50 real nodes, `harn
// agents list --json` on a node that is not a server shows another
// node's session within 2 s of its first hook.
func TestFiftyNodesSeeEachOthersSessionsWithin2s(t *testing.T) {
	scaleOn(t)
	m := startScaleMesh(t, 50, false)
	time.Sleep(10 * time.Second)
	if worst := m.sessionRounds(5); worst > 2*time.Second {
		t.Errorf("a session took %v to show on another node (want at most 2 s)", worst)
	}
}

// sessionRounds starts a session (a Claude Code SessionStart hook) on a
// random node that is not a server, rounds times, and times until another
// such node lists it; it returns the slowest round.
func (m *scaleMesh) sessionRounds(rounds int) time.Duration {
	t := m.tb
	n := len(m.nodes)
	var worst time.Duration
	for round := range rounds {
		from := m.nodes[1+rand.IntN(n-1)]
		to := m.nodes[1+rand.IntN(n-1)]
		for to == from {
			to = m.nodes[1+rand.IntN(n-1)]
		}
		sid := fmt.Sprintf("scale-%d-%08x", round, rand.Uint32())
		start := time.Now()
		if r := run(t, from.environ(), claudeStart(sid, t.TempDir()), "hook", "claude-code"); r.code != 0 {
			t.Fatalf("hook: %v", r)
		}
		for {
			r := run(t, to.environ(), "", "agents", "list", "--json")
			if r.code == 0 && strings.Contains(r.stdout, sid) {
				break
			}
			if time.Since(start) > 10*time.Second {
				t.Fatalf("%s does not list %s's session after 10 s", to.name, from.name)
			}
			time.Sleep(20 * time.Millisecond)
		}
		d := time.Since(start)
		t.Logf("%s's session on %s after %v", from.name, to.name, d.Round(time.Millisecond))
		worst = max(worst, d)
	}
	return worst
}

// TestHundredRealNodes: 100 real nodes (one server) beside 100 bare
// memberlist processes on this machine: every node lists 100 alive
// members, a session shows on another node within 2 s of its hook, and
// the idle figures are printed as a row of the idle table.
func TestHundredRealNodes(t *testing.T) {
	scaleOn(t)
	begin := time.Now()
	m := startScaleMesh(t, 100, true)
	t.Logf("100 nodes and 100 bare processes up in %v (load %s)", time.Since(begin).Round(time.Second), loadAverage())
	f := m.measureIdle(30*time.Second, 60*time.Second)
	t.Log(f)
	fmt.Println(idleHeader)
	fmt.Println(f.row())
	if worst := m.sessionRounds(5); worst > 2*time.Second {
		t.Errorf("a session took %v to show on another node (want at most 2 s)", worst)
	}
	t.Logf("took %v, load %s", time.Since(begin).Round(time.Second), loadAverage())
}

// BenchmarkMeshIdle measures, at 5 and 50 real nodes (one server), the
// idle CPU and memory of a node against a bare memberlist process with
// the same gossip settings, and the server's idle CPU (make bench). It
// prints its rows on stdout in docs/perf-mesh.md's table, with the load
// average they ran under.
func BenchmarkMeshIdle(b *testing.B) {
	fmt.Println(idleHeader)
	for _, n := range []int{5, 50} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			m := startScaleMesh(b, n, true)
			f := m.measureIdle(30*time.Second, 60*time.Second)
			b.ReportMetric(f.node, "node_cpu_ms/s")
			b.ReportMetric(f.bare, "bare_cpu_ms/s")
			b.ReportMetric(f.node/f.bare, "node/bare_cpu")
			b.ReportMetric(f.server, "server_cpu_ms/s")
			b.ReportMetric(f.nodeRSS, "node_rss_MiB")
			b.ReportMetric(f.nodeAnon, "node_anon_MiB")
			b.ReportMetric(f.bareRSS, "bare_rss_MiB")
			b.Log(f)
			fmt.Println(f.row())
		})
	}
}

// idleHeader heads the idle table (docs/perf-mesh.md, "What a node costs
// at rest").
const idleHeader = "| nodes | median node CPU | bare memberlist CPU | node / bare | server CPU | server / node | node RSS (anonymous) | bare RSS | load |\n" +
	"| --- | --- | --- | --- | --- | --- | --- | --- | --- |"

// row is f as a row of the idle table.
func (f idleFigures) row() string {
	return fmt.Sprintf("| %d | %.2f ms/s | %.2f ms/s | **%.2f** | %.2f ms/s | **%.2f** | %.1f MiB (%.1f) | %.1f MiB | %s |",
		f.nodes, f.node, f.bare, f.node/f.bare, f.server, f.server/f.node, f.nodeRSS, f.nodeAnon, f.bareRSS, f.load)
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
