package cli_test

// Benchmarks of real harn processes (make bench), each beside its baseline
// in the same run: `harn hook claude-code` beside `harn version` (the cost
// of starting the binary at all) and beside a hello-world Go binary, and
// `harn agents list --json` over 10,000 sessions beside `harn version`. Benchmarks report; they never fail
// on speed.
//
// The binary is $HARN_BIN (the Makefile sets it) or is built into a temp
// dir; when it cannot be built the benchmarks skip and say why.

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/node"
	"github.com/harn-dev/harn/node/layout"
)

// harnBin returns $HARN_BIN (harnd beside it), or builds both binaries
// into a temp dir of b;
// it skips b when neither works.
func harnBin(b *testing.B) string {
	b.Helper()
	if p := os.Getenv("HARN_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			b.Skipf("skipping: HARN_BIN=%s is not usable: %v", p, err)
		}
		return p
	}
	dir := b.TempDir()
	p := filepath.Join(dir, "harn")
	// As `make build` does: the client, the hook's binary and harnd side by side.
	for _, args := range [][]string{{"-tags", "grpcnotrace", "github.com/harn-dev/harn/cmd/harn"},
		{"-tags", "grpcnotrace", "github.com/harn-dev/harn/cmd/harn-hook"}, {"-tags", "grpcnotrace", "github.com/harn-dev/harn/cmd/harnd"}} {
		out, err := exec.Command("go", append([]string{"build", "-o", dir + string(filepath.Separator)}, args...)...).CombinedOutput()
		if err != nil {
			b.Skipf("skipping: cannot build harn (set HARN_BIN or fix the build): %v\n%s", err, out)
		}
	}
	return p
}

// hookBin is harn-hook beside harn (what `harn hook install` writes into
// the agents' settings); a tree without it skips, except under CI=true.
func hookBin(b *testing.B, harn string) string {
	b.Helper()
	p := filepath.Join(filepath.Dir(harn), "harn-hook")
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") == "true" {
			b.Fatalf("no harn-hook beside %s (make build writes both): %v", harn, err)
		}
		b.Skipf("skipping: no harn-hook beside %s; run make build", harn)
	}
	return p
}

// shortDir makes a temp dir with a short path, so that the socket inside
// it stays well under the unix socket path limit.
func shortDir(b *testing.B) string {
	b.Helper()
	d, err := os.MkdirTemp("", "hb")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// benchNode is an in-process node with the daemon's defaults on dir (a
// lone machine's mesh with its Raft registry), its cluster listeners on
// free ports so as never to collide with a node already running here.
func benchNode(b *testing.B, dir string) *node.Node {
	b.Helper()
	cfg := node.DefaultConfig()
	cfg.DataDir = dir
	cfg.Socket = filepath.Join(dir, "s.sock")
	cfg.Name = "buildbox"
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.Cluster.GossipPort, cfg.Cluster.RaftPort, cfg.Cluster.RPCPort, cfg.Cluster.HTTPPort = 0, 0, 0, 0
	n, err := node.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := n.Open(); err != nil {
		b.Fatal(err)
	}
	return n
}

// runner runs the harn binary against one data dir, isolated from the
// caller's config file, and times each run.
type runner struct {
	bin, dir, sock string
	env            []string
}

func newRunner(b *testing.B, dir string) *runner {
	cfgHome := filepath.Join(dir, "xdg-config")
	return &runner{bin: harnBin(b), dir: dir, sock: filepath.Join(dir, "s.sock"),
		env: append(os.Environ(), "XDG_CONFIG_HOME="+cfgHome, "HARN_CONFIG=")}
}

// run runs harn with args (and the data dir and socket flags unless
// bare), stdin as input, and returns the wall time and stdout; a failed
// run fails b.
func (r *runner) run(b *testing.B, stdin []byte, place bool, args ...string) (time.Duration, []byte) {
	b.Helper()
	el, out, err := r.try(stdin, place, args...)
	if err != nil {
		b.Fatal(err)
	}
	return el, out
}

// try is run that returns the failure.
func (r *runner) try(stdin []byte, place bool, args ...string) (time.Duration, []byte, error) {
	if place {
		args = append(args, "--data-dir", r.dir, "--socket", r.sock)
	}
	cmd := exec.Command(r.bin, args...)
	cmd.Env = r.env
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	el := time.Since(start)
	if err != nil {
		return el, nil, fmt.Errorf("harn %v: %v\n%s", args, err, bytes.TrimSpace(errb.Bytes()))
	}
	return el, out.Bytes(), nil
}

// pct is the p-th percentile (nearest rank) of sorted ds.
func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := int(p/100*float64(len(ds))+0.5) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// hookRuns is how many hook and version processes one iteration runs.
const hookRuns = 500

// helloBin builds a hello-world Go program into a temp dir of b: the floor
// a Go process's start costs on this machine, built in the same run.
func helloBin(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	src := "package main\n\nimport \"os\"\n\nfunc main() { os.Stdout.WriteString(\"hello\\n\") }\n"
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hello\n\ngo 1.21\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(dir, "hello")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", p, ".")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Skipf("skipping: cannot build hello world: %v\n%s", err, out)
	}
	return p
}

// BenchmarkHook runs `harn hook claude-code` with a PreToolUse payload on
// stdin against a running node (in this process, on the daemon's
// defaults), 500 times, interleaved with 500 runs of `harn version` and 500
// of a hello-world Go binary built in the same run; it reports p50 and p99
// of each and the ratios hook/version and hook/hello (the goal: a p50
// ratio hook/hello of at most 2). One iteration is the whole sample (b.N
// is 1 unless -benchtime asks for more).
func BenchmarkHook(b *testing.B) {
	dir := shortDir(b)
	r := newRunner(b, dir)
	hr := &runner{bin: helloBin(b), env: r.env}
	n := benchNode(b, dir)
	defer n.Close()
	const sid = "8a1f0c2e-5b7d-4e21-9c3a-0d6e2f4b1a77"
	payload := []byte(`{"session_id":"` + sid + `","transcript_path":"/home/ana/.claude/projects/-home-ana-shop/` + sid +
		`.jsonl","cwd":"/home/ana/shop","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash",` +
		`"tool_input":{"command":"go test ./...","description":"Run the tests"},"tool_use_id":"toolu_01ABCxyz"}`)
	start := []byte(`{"session_id":"` + sid + `","transcript_path":"/home/ana/.claude/projects/-home-ana-shop/` + sid +
		`.jsonl","cwd":"/home/ana/shop","permission_mode":"default","hook_event_name":"SessionStart","source":"startup"}`)
	r.run(b, start, true, "hook", "claude-code")
	for i := 0; i < 10; i++ { // warm the page cache and the node
		r.run(b, payload, true, "hook", "claude-code")
		r.run(b, nil, false, "version")
		hr.run(b, nil, false)
	}
	var hook, version, hello []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := 0; j < hookRuns; j++ {
			if j%2 == 0 {
				d, _ := r.run(b, payload, true, "hook", "claude-code")
				hook = append(hook, d)
				d, _ = r.run(b, nil, false, "version")
				version = append(version, d)
			} else {
				d, _ := r.run(b, nil, false, "version")
				version = append(version, d)
				d, _ = r.run(b, payload, true, "hook", "claude-code")
				hook = append(hook, d)
			}
			d, _ := hr.run(b, nil, false)
			hello = append(hello, d)
		}
	}
	b.StopTimer()
	// Every hook must have reached the node, none spooled.
	st, err := n.Resolve(sid)
	if err != nil {
		b.Fatal(err)
	}
	if want := 1 + 10 + b.N*hookRuns; st.Events != want {
		b.Errorf("session has %d events, want %d: some hooks did not reach the node", st.Events, want)
	}
	if ents, _ := os.ReadDir(layout.SpoolDir(dir)); len(ents) > 0 {
		b.Errorf("%d hook records were spooled: the node did not answer in time", len(ents))
	}
	slices.Sort(hook)
	slices.Sort(version)
	slices.Sort(hello)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(pct(hello, 50)), "hello-p50-ms")
	b.ReportMetric(float64(pct(hook, 50))/float64(pct(hello, 50)), "p50-hook/hello")
	b.ReportMetric(ms(pct(hook, 50)), "hook-p50-ms")
	b.ReportMetric(ms(pct(hook, 99)), "hook-p99-ms")
	b.ReportMetric(ms(pct(version, 50)), "version-p50-ms")
	b.ReportMetric(ms(pct(version, 99)), "version-p99-ms")
	b.ReportMetric(float64(pct(hook, 50))/float64(pct(version, 50)), "p50-hook/version")
	b.ReportMetric(float64(pct(hook, 99))/float64(pct(version, 99)), "p99-hook/version")
}

// hookVsHelloRuns is how many hook and hello processes
// BenchmarkHookVsHello runs per iteration.
const hookVsHelloRuns = 300

// BenchmarkHookVsHello is the hook's goal on its own: the installed hook
// (`harn-hook hook claude-code`, as `harn hook install` writes it) with a
// PreToolUse payload against a running node, and a hello-world Go binary
// built in the same run, interleaved (the order alternates each round),
// 300 of each; it reports p50 and p99 of each and their ratios. The goal
// is a p50 ratio hook/hello of at most 2. Every fourth round also runs
// `harn hook claude-code` (the same hook in the whole client), reported as
// harn-subcommand-p50-ms.
func BenchmarkHookVsHello(b *testing.B) {
	dir := shortDir(b)
	full := newRunner(b, dir)
	r := &runner{bin: hookBin(b, full.bin), dir: full.dir, sock: full.sock, env: full.env}
	hr := &runner{bin: helloBin(b), env: r.env}
	n := benchNode(b, dir)
	defer n.Close()
	const sid = "5c2e8a1f-0b7d-4e21-9c3a-1a77d6e2f4b0"
	head := `{"session_id":"` + sid + `","transcript_path":"/home/ana/.claude/projects/-home-ana-shop/` + sid +
		`.jsonl","cwd":"/home/ana/shop","permission_mode":"default",`
	start := []byte(head + `"hook_event_name":"SessionStart","source":"startup"}`)
	pre := []byte(head + `"hook_event_name":"PreToolUse","tool_name":"Bash",` +
		`"tool_input":{"command":"go test ./...","description":"Run the tests"},"tool_use_id":"toolu_01HVHxyz"}`)
	r.run(b, start, true, "hook", "claude-code")
	for i := 0; i < 10; i++ { // warm the page cache and the node
		r.run(b, pre, true, "hook", "claude-code")
		hr.run(b, nil, false)
	}
	var hook, hello, harnHook []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := 0; j < hookVsHelloRuns; j++ {
			if j%2 == 0 {
				d, _ := r.run(b, pre, true, "hook", "claude-code")
				hook = append(hook, d)
				d, _ = hr.run(b, nil, false)
				hello = append(hello, d)
			} else {
				d, _ := hr.run(b, nil, false)
				hello = append(hello, d)
				d, _ = r.run(b, pre, true, "hook", "claude-code")
				hook = append(hook, d)
			}
			if j%4 == 0 { // `harn hook`, the same hook in the whole client, now and then
				d, _ := full.run(b, pre, true, "hook", "claude-code")
				harnHook = append(harnHook, d)
			}
		}
	}
	b.StopTimer()
	st, err := n.Resolve(sid)
	if err != nil {
		b.Fatal(err)
	}
	if want := 1 + 10 + b.N*hookVsHelloRuns + len(harnHook); st.Events != want {
		b.Errorf("session has %d events, want %d: some hooks did not reach the node", st.Events, want)
	}
	if ents, _ := os.ReadDir(layout.SpoolDir(dir)); len(ents) > 0 {
		b.Errorf("%d hook records were spooled: the node did not answer in time", len(ents))
	}
	slices.Sort(hook)
	slices.Sort(hello)
	slices.Sort(harnHook)
	b.ReportMetric(ms(pct(harnHook, 50)), "harn-subcommand-p50-ms")
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(pct(hook, 50)), "hook-p50-ms")
	b.ReportMetric(ms(pct(hook, 99)), "hook-p99-ms")
	b.ReportMetric(ms(pct(hello, 50)), "hello-p50-ms")
	b.ReportMetric(ms(pct(hello, 99)), "hello-p99-ms")
	b.ReportMetric(float64(pct(hook, 50))/float64(pct(hello, 50)), "p50-hook/hello")
	b.ReportMetric(float64(pct(hook, 99))/float64(pct(hello, 99)), "p99-hook/hello")
}

// rosterSessions is the size of the roster benchmarks.
const rosterSessions = 10000

// BenchmarkAgentsList10k fills a node with 10,000 live sessions, then runs
// `harn agents list --json` against it as a real process 20 times,
// interleaved with `harn version`, and reports p50 (and max) of each. (The
// node restart with 10,000 sessions is node's BenchmarkRestart10k.)
func BenchmarkAgentsList10k(b *testing.B) {
	dir := shortDir(b)
	r := newRunner(b, dir)
	n := benchNode(b, dir)
	defer n.Close()
	t := time.Now()
	if err := node.Populate(n, rosterSessions); err != nil {
		b.Fatal(err)
	}
	populated := time.Since(t)
	settle(b, dir, rosterSessions)
	if got := n.Sessions(false); len(got) != rosterSessions {
		b.Fatalf("node has %d live sessions, want %d", len(got), rosterSessions)
	}
	if _, _, err := r.try(nil, true, "agents", "list", "--json"); err != nil {
		b.Fatalf("`harn agents list --json` with %d live sessions fails: %v", rosterSessions, err)
	}
	for i := 0; i < 2; i++ { // warm
		r.run(b, nil, true, "agents", "list", "--json")
		r.run(b, nil, false, "version")
	}
	const runs = 20
	var list, version []time.Duration
	var outLen int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := 0; j < runs; j++ {
			d, out := r.run(b, nil, true, "agents", "list", "--json")
			list = append(list, d)
			outLen = len(out)
			d, _ = r.run(b, nil, false, "version")
			version = append(version, d)
		}
	}
	b.StopTimer()
	slices.Sort(list)
	slices.Sort(version)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(populated.Seconds(), "populate-s")
	b.ReportMetric(ms(pct(list, 50)), "list-p50-ms")
	b.ReportMetric(ms(list[len(list)-1]), "list-max-ms")
	b.ReportMetric(ms(pct(version, 50)), "version-p50-ms")
	b.ReportMetric(float64(pct(list, 50))/float64(pct(version, 50)), "p50-list/version")
	b.ReportMetric(float64(outLen)/1e6, "list-MB")
}

// settle waits (at most 60 s) until the node has written the heartbeat
// file of every session and no write is in flight (no temporary file, the
// same count twice in a row), so that its background writes do not
// overlap the timed runs.
func settle(b *testing.B, dir string, sessions int) {
	b.Helper()
	prev := -1
	for i := 0; i < 600; i++ {
		ents, _ := os.ReadDir(layout.ActiveDir(dir))
		n, tmp := 0, 0
		for _, e := range ents {
			switch {
			case strings.HasSuffix(e.Name(), ".json"):
				n++
			case strings.HasPrefix(e.Name(), ".hb-"):
				tmp++
			}
		}
		if n >= sessions && tmp == 0 && n == prev {
			return
		}
		prev = n
		time.Sleep(100 * time.Millisecond)
	}
	b.Fatalf("the node did not write %d heartbeat files within 60 s", sessions)
}
