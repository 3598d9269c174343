// Package partition runs a three-server harn mesh in Docker containers
// (the FROM scratch image of deploy/Dockerfile) and cuts the network
// between them: the majority side keeps taking registry writes, the
// minority side reads stale and refuses consistent reads, and after the
// network heals every node converges on one registry view.
//
// The tests need a Docker engine. Without one they skip, unless CI=true,
// where they fail. They build the static binary and a uniquely tagged image
// themselves, and remove every container, network, volume and image they
// create. The CLI is driven inside the containers with `docker exec`
// (scratch has no shell: the binary is exec'd directly).
package partition

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/harn-dev/harn/internal/testsupport"
)

// labelKey marks every Docker object these tests create, with the run id.
const labelKey = "dev.harn.partition-test"

// Exit codes of the harn CLI (cli/exit.go).
const (
	exitOK       = 0
	exitNoLeader = 8
	exitPending  = 11
)

var (
	runID = randomHex(4)

	imageOnce sync.Once
	imageTag  string // set once the image exists; removed by TestMain
	imageErr  error
	buildDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if imageTag != "" {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if out, err := exec.CommandContext(ctx, "docker", "rmi", "-f", imageTag).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "partition: removing image %s: %v: %s\n", imageTag, err, out)
		}
		cancel()
	}
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// requireDocker skips the test when no Docker engine answers, or fails it
// when CI=true.
func requireDocker(t *testing.T) {
	t.Helper()
	ci := os.Getenv("CI") == "true"
	unavailable := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if ci {
			t.Fatalf("%s (CI=true: the partition tests must run here)", msg)
		}
		t.Skipf("%s; skipping the Docker partition tests (with CI=true this fails)", msg)
	}
	if testing.Short() && !ci {
		t.Skip("-short: skipping the Docker partition tests")
	}
	if _, err := exec.LookPath("docker"); err != nil {
		unavailable("docker is not installed: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput()
	if err != nil {
		unavailable("`docker info` failed (is the engine running?): %v: %s", err, bytes.TrimSpace(out))
	}
}

// moduleRoot finds the repository root (the go.mod of the harn module)
// above the test's working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for range 10 {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.Contains(b, []byte("module github.com/harn-dev/harn\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", errors.New("go.mod of github.com/harn-dev/harn not found above the working directory")
}

// image builds the static binary and the scratch image once per run.
func image(t *testing.T) string {
	t.Helper()
	imageOnce.Do(func() { imageErr = buildImage(t) })
	if imageErr != nil {
		t.Fatal(imageErr)
	}
	return imageTag
}

func buildImage(t *testing.T) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	buildDir, err = os.MkdirTemp("", "harn-partition-")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	start := time.Now()
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", buildDir+string(filepath.Separator), "./cmd/harn", "./cmd/harnd")
	build.Dir = root
	// A static binary: no cgo, so no -race either (a GOFLAGS -race would
	// fail the build).
	var goflags []string
	for _, f := range strings.Fields(os.Getenv("GOFLAGS")) {
		if f != "-race" && f != "-race=true" {
			goflags = append(goflags, f)
		}
	}
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOFLAGS="+strings.Join(goflags, " "))
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building the static harn and harnd binaries: %v\n%s", err, out)
	}
	// harn-hook, which the image holds beside them (deploy/Dockerfile).
	hook := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", buildDir+string(filepath.Separator), "./cmd/harn-hook")
	hook.Dir, hook.Env = root, build.Env
	if out, err := hook.CombinedOutput(); err != nil {
		return fmt.Errorf("building the static harn-hook binary: %v\n%s", err, out)
	}
	t.Logf("built the static binary in %s", time.Since(start).Round(time.Millisecond))
	df, err := os.ReadFile(filepath.Join(root, "deploy", "Dockerfile"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(buildDir, "Dockerfile"), df, 0o644); err != nil {
		return err
	}
	tag := "harn-partition-test:" + runID
	start = time.Now()
	out, err := exec.CommandContext(ctx, "docker", "build", "-q", "--label", labelKey+"="+runID, "-t", tag, buildDir).CombinedOutput()
	if err != nil {
		// A half-built image may still carry the tag.
		imageTag = tag
		return fmt.Errorf("docker build: %v\n%s", err, out)
	}
	imageTag = tag
	t.Logf("built image %s in %s", tag, time.Since(start).Round(time.Millisecond))
	return nil
}

// docker runs one docker command, bounded by timeout.
func docker(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("docker %s: timed out after %s", args[0], timeout)
	}
	return strings.TrimSpace(string(out)), err
}

// node is one harn server in a container.
type node struct {
	name      string // harn node name (--name) and container hostname
	container string
	ip        string
	session   string // the agent session created on this node
}

// cluster is three harn servers on a private Docker network.
type cluster struct {
	t       *testing.T
	image   string
	network string
	nodes   []*node
}

// newCluster starts three servers, waits for the registry to have a leader
// and creates one agent session on each node.
func newCluster(t *testing.T, tag string) *cluster {
	t.Helper()
	requireDocker(t)
	img := image(t)
	c := &cluster{t: t, image: img, network: fmt.Sprintf("harnpt-%s-%s", runID, tag)}
	prefix := c.createNetwork()
	var joins []string
	for i := 1; i <= 3; i++ {
		ip := fmt.Sprintf("%s.%d", prefix, 10+i)
		joins = append(joins, "--join", ip+":7710")
	}
	for i := 1; i <= 3; i++ {
		n := &node{name: fmt.Sprintf("node%d", i), container: fmt.Sprintf("%s-node%d", c.network, i),
			ip: fmt.Sprintf("%s.%d", prefix, 10+i), session: fmt.Sprintf("s-%s-%s-node%d", runID, tag, i)}
		c.nodes = append(c.nodes, n)
		t.Cleanup(func() {
			if out, err := docker(time.Minute, "rm", "-f", "-v", n.container); err != nil && !strings.Contains(out, "No such container") {
				t.Logf("removing container %s: %v: %s", n.container, err, out)
			}
		})
		args := []string{"run", "-d", "--name", n.container, "--hostname", n.name, "--label", labelKey + "=" + runID,
			"--network", c.network, "--ip", n.ip, img,
			"node", "--name", n.name, "--server", "--bootstrap-expect", "3", "--bind", "0.0.0.0", "--advertise", n.ip, "--insecure-mesh",
			"--mesh-profile", "local", "--raft-profile", "fast"}
		args = append(args, joins...)
		if out, err := docker(time.Minute, args...); err != nil {
			t.Fatalf("docker run %s: %v: %s", n.container, err, out)
		}
	}
	// Runs first (cleanups are LIFO): the nodes' logs when the test failed.
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, n := range c.nodes {
			out, _ := docker(30*time.Second, "logs", "--tail", "60", n.container)
			t.Logf("---- last log lines of %s (%s) ----\n%s", n.name, n.container, out)
		}
	})
	start := time.Now()
	c.waitLeader(60 * time.Second)
	t.Logf("registry formed with a leader in %s", time.Since(start).Round(time.Millisecond))
	c.createSessions()
	return c
}

// createNetwork creates the test's network on a free /24 of 172.31.0.0/16
// and returns the subnet's first three octets.
func (c *cluster) createNetwork() string {
	t := c.t
	var lastOut string
	for range 40 {
		prefix := fmt.Sprintf("172.31.%d", 16+mrand.IntN(240))
		out, err := docker(time.Minute, "network", "create", "--driver", "bridge", "--subnet", prefix+".0/24",
			"--label", labelKey+"="+runID, c.network)
		if err == nil {
			t.Cleanup(func() {
				if out, err := docker(time.Minute, "network", "rm", c.network); err != nil {
					t.Logf("removing network %s: %v: %s", c.network, err, out)
				}
			})
			return prefix
		}
		lastOut = out
		if !strings.Contains(out, "overlap") && !strings.Contains(out, "in use") {
			t.Fatalf("docker network create %s: %v: %s", c.network, err, out)
		}
	}
	t.Fatalf("no free subnet in 172.31.0.0/16 for the test network after 40 tries: %s", lastOut)
	return ""
}

// result is the outcome of one CLI call inside a container.
type result struct {
	code           int
	stdout, stderr string
	call, ret      time.Time
	timedOut       bool
}

func (r result) String() string {
	return fmt.Sprintf("exit %d, stdout %q, stderr %q", r.code, clip(r.stdout, 600), clip(r.stderr, 400))
}

func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// harn runs the harn CLI in node n's container with the node's data dir
// and socket, bounded by timeout. A call that runs out of time reports
// timedOut and exit code -1.
func (c *cluster) harn(n *node, timeout time.Duration, stdin []byte, args ...string) result {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	dargs := []string{"exec"}
	if stdin != nil {
		dargs = append(dargs, "-i")
	}
	dargs = append(dargs, n.container, "/harn")
	dargs = append(dargs, args...)
	dargs = append(dargs, "--socket", "/data/harn.sock", "--data-dir", "/data")
	cmd := exec.CommandContext(ctx, "docker", dargs...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	r := result{call: time.Now()}
	err := cmd.Run()
	r.ret = time.Now()
	r.stdout, r.stderr = stdout.String(), stderr.String()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		r.code, r.timedOut = -1, true
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		r.code, r.stderr = -1, r.stderr+err.Error()
	}
	return r
}

// entry is one session of `agents list --json`.
type entry struct {
	SessionID     string `json:"session_id"`
	Node          string `json:"node"`
	TaskState     string `json:"task_state"`
	BlockerReason string `json:"blocker_reason"`
	Reachable     bool   `json:"reachable"`
	Source        string `json:"source"`
}

// list runs `agents list --json` (consistent: through the leader) on n.
func (c *cluster) list(n *node, consistent bool, timeout time.Duration) (result, map[string]entry, error) {
	args := []string{"agents", "list", "--json"}
	if consistent {
		args = append(args, "--consistent")
	}
	r := c.harn(n, timeout, nil, args...)
	if r.code != exitOK {
		return r, nil, fmt.Errorf("agents list on %s: %s", n.name, r)
	}
	var es []entry
	if err := json.Unmarshal([]byte(r.stdout), &es); err != nil {
		return r, nil, fmt.Errorf("agents list on %s: bad JSON: %v: %s", n.name, err, r)
	}
	m := make(map[string]entry, len(es))
	for _, e := range es {
		m[e.SessionID] = e
	}
	return r, m, nil
}

// raftView is `mesh raft --json`.
type raftView struct {
	Leader  string `json:"leader"`
	Term    uint64 `json:"term"`
	Applied uint64 `json:"applied_index"`
	State   string `json:"state"`
	Servers []struct {
		ID    string `json:"id"`
		Voter bool   `json:"voter"`
	} `json:"servers"`
}

func (c *cluster) raft(n *node) (raftView, error) {
	r := c.harn(n, 15*time.Second, nil, "mesh", "raft", "--json")
	var v raftView
	if r.code != exitOK {
		return v, fmt.Errorf("mesh raft on %s: %s", n.name, r)
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		return v, fmt.Errorf("mesh raft on %s: %v: %s", n.name, err, r)
	}
	return v, nil
}

// waitLeader waits until every node knows a leader and three voters.
func (c *cluster) waitLeader(bound time.Duration) {
	c.t.Helper()
	var last string
	ok := poll(bound, 200*time.Millisecond, func() bool {
		for _, n := range c.nodes {
			v, err := c.raft(n)
			if err != nil {
				last = err.Error()
				return false
			}
			voters := 0
			for _, s := range v.Servers {
				if s.Voter {
					voters++
				}
			}
			if v.Leader == "" || voters != 3 {
				last = fmt.Sprintf("%s: leader %q, %d voters", n.name, v.Leader, voters)
				return false
			}
		}
		return true
	})
	if !ok {
		c.t.Fatalf("no registry leader with three voters within %s: %s", bound, last)
	}
}

// leader returns the node that leads the registry, as the first node that
// answers says.
func (c *cluster) leader() (*node, error) {
	var lastErr error
	for range 20 {
		for _, n := range c.nodes {
			v, err := c.raft(n)
			if err != nil {
				lastErr = err
				continue
			}
			for _, m := range c.nodes {
				if m.name == v.Leader {
					return m, nil
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil, fmt.Errorf("no node names a leader: %v", lastErr)
}

// createSessions starts one Claude Code session on each node through the
// agent hook, and waits until every node lists all three through the leader
// and every replica has applied the same registry entries.
func (c *cluster) createSessions() {
	t := c.t
	t.Helper()
	for _, n := range c.nodes {
		payload := fmt.Sprintf(`{"session_id":%q,"cwd":"/data","hook_event_name":"SessionStart","source":"startup","model":"claude-sonnet-4-6"}`, n.session)
		if r := c.harn(n, 30*time.Second, []byte(payload), "hook", "claude-code"); r.code != exitOK {
			t.Fatalf("hook claude-code on %s: %s", n.name, r)
		}
	}
	var last string
	ok := poll(45*time.Second, 200*time.Millisecond, func() bool {
		for _, n := range c.nodes {
			_, m, err := c.list(n, true, 15*time.Second)
			if err != nil {
				last = err.Error()
				return false
			}
			for _, s := range c.nodes {
				if _, found := m[s.session]; !found {
					last = fmt.Sprintf("%s does not list %s yet", n.name, s.session)
					return false
				}
			}
		}
		// Every replica holds the sessions: their applied indexes agree.
		var applied []uint64
		for _, n := range c.nodes {
			v, err := c.raft(n)
			if err != nil {
				last = err.Error()
				return false
			}
			applied = append(applied, v.Applied)
		}
		if applied[0] != applied[1] || applied[1] != applied[2] {
			last = fmt.Sprintf("replicas' applied indexes differ: %v", applied)
			return false
		}
		return true
	})
	if !ok {
		t.Fatalf("the three sessions did not reach every node: %s", last)
	}
}

// cut disconnects n from the test network; heal reconnects it with its IP.
func (c *cluster) cut(n *node) {
	c.t.Helper()
	if out, err := docker(time.Minute, "network", "disconnect", c.network, n.container); err != nil {
		c.t.Fatalf("docker network disconnect %s: %v: %s", n.container, err, out)
	}
}

func (c *cluster) heal(n *node) {
	c.t.Helper()
	if out, err := docker(time.Minute, "network", "connect", "--ip", n.ip, c.network, n.container); err != nil {
		c.t.Fatalf("docker network connect %s: %v: %s", n.container, err, out)
	}
}

func (c *cluster) others(n *node) []*node {
	var out []*node
	for _, m := range c.nodes {
		if m != n {
			out = append(out, m)
		}
	}
	return out
}

// poll calls cond every interval until it holds or bound has passed.
func poll(bound, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(bound)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
}

// lifecycleOut is `agents lifecycle --json`.
type lifecycleOut struct {
	Recorded bool   `json:"recorded"`
	Note     string `json:"note"`
	Session  struct {
		TaskState     string `json:"task_state"`
		BlockerReason string `json:"blocker_reason"`
	} `json:"session"`
}

func (c *cluster) block(n *node, session, reason string, timeout time.Duration) (result, lifecycleOut, error) {
	r := c.harn(n, timeout, nil, "agents", "lifecycle", "blocked", "--reason", reason, "--session", session, "--json")
	var out lifecycleOut
	// exitPending: recorded in the node's ledger, the registry write still
	// pending after the call's --timeout (a minority's change).
	if r.code != exitOK && r.code != exitPending {
		return r, out, fmt.Errorf("lifecycle blocked on %s: %s", n.name, r)
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		return r, out, fmt.Errorf("lifecycle blocked on %s: bad JSON: %v: %s", n.name, err, r)
	}
	return r, out, nil
}

// view is a registry view: per session, task_state and blocker_reason.
type view map[string]string

func viewOf(m map[string]entry, sessions []string) view {
	v := view{}
	for _, s := range sessions {
		e, ok := m[s]
		if !ok {
			v[s] = "(missing)"
			continue
		}
		v[s] = e.TaskState + "/" + e.BlockerReason
	}
	return v
}

func (v view) String() string {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s ", k, v[k])
	}
	return strings.TrimSpace(b.String())
}

func (c *cluster) sessions() []string {
	var out []string
	for _, n := range c.nodes {
		out = append(out, n.session)
	}
	return out
}

// waitConverged waits until every node's consistent list shows want.
func (c *cluster) waitConverged(want view, bound time.Duration) (time.Duration, bool, string) {
	start := time.Now()
	var last string
	ok := poll(bound, 250*time.Millisecond, func() bool {
		for _, n := range c.nodes {
			_, m, err := c.list(n, true, 15*time.Second)
			if err != nil {
				last = err.Error()
				return false
			}
			if got := viewOf(m, c.sessions()); got.String() != want.String() {
				last = fmt.Sprintf("%s sees %s", n.name, got)
				return false
			}
		}
		return true
	})
	return time.Since(start), ok, last
}

// TestPartitionMajorityMinority cuts one server (the leader, when one is
// known) off the network. The two others keep taking lifecycle changes;
// the cut one still answers local (stale) reads, says they are stale,
// refuses consistent reads with exit code 8, and records its own session's
// lifecycle change locally with the registry write pending. After the
// network heals, every node converges on one view, which includes the
// change made on the minority side, and that change reached the registry
// itself (checked by reading the registry's record while its owner is cut
// off again).
func TestPartitionMajorityMinority(t *testing.T) {
	c := newCluster(t, "mm")
	minority, err := c.leader()
	if err != nil {
		t.Fatal(err)
	}
	majority := c.others(minority)
	t.Logf("cutting off %s (it led the registry when asked); majority %s, %s", minority.name, majority[0].name, majority[1].name)
	cutAt := time.Now()
	c.cut(minority)

	// (a) The majority elects a leader and keeps accepting lifecycle
	// changes: recorded, and committed to the registry (no pending note).
	// A leader change inside the majority can leave one attempt pending,
	// so a few attempts are allowed, each with a new reason.
	majReason := ""
	for attempt := 1; attempt <= 3 && majReason == ""; attempt++ {
		reason := fmt.Sprintf("waiting for review %d", attempt)
		r, out, err := c.block(majority[0], majority[0].session, reason, 30*time.Second)
		switch {
		case err != nil:
			t.Fatalf("(a) the majority refused a lifecycle change: %v", err)
		case !out.Recorded || out.Session.TaskState != "blocked" || out.Session.BlockerReason != reason:
			t.Fatalf("(a) lifecycle on %s: not recorded as blocked/%q: %s", majority[0].name, reason, r)
		case out.Note != "":
			t.Logf("(a) attempt %d on %s recorded, registry write pending (%s); trying again", attempt, majority[0].name, out.Note)
		default:
			majReason = reason
			t.Logf("(a) %s: lifecycle blocked committed to the registry %s after the cut (call took %s)",
				majority[0].name, time.Since(cutAt).Round(time.Millisecond), r.ret.Sub(r.call).Round(time.Millisecond))
		}
	}
	if majReason == "" {
		t.Fatalf("(a) the majority never committed a lifecycle change to the registry in 3 attempts")
	}
	// The majority's consistent read sees it.
	var last string
	if !poll(30*time.Second, 200*time.Millisecond, func() bool {
		_, m, err := c.list(majority[1], true, 15*time.Second)
		if err != nil {
			last = err.Error()
			return false
		}
		e := m[majority[0].session]
		last = fmt.Sprintf("%s sees %s as %s/%s", majority[1].name, majority[0].session, e.TaskState, e.BlockerReason)
		return e.TaskState == "blocked" && e.BlockerReason == majReason
	}) {
		t.Fatalf("(a) the majority's consistent read does not show the change: %s", last)
	}

	// (b) The minority notices it has no leader: consistent reads fail with
	// exit code 8 (bounded wait), local reads still answer, marked stale, and
	// list every session it knew.
	var lastR result
	if !poll(30*time.Second, 200*time.Millisecond, func() bool {
		lastR = c.harn(minority, 20*time.Second, nil, "agents", "list", "--consistent", "--json")
		return lastR.code == exitNoLeader
	}) {
		t.Fatalf("(b) the minority's consistent read did not fail with exit code %d: %s", exitNoLeader, lastR)
	}
	t.Logf("(b) %s refuses consistent reads (exit %d, %q) %s after the cut", minority.name, lastR.code,
		clip(lastR.stderr, 200), time.Since(cutAt).Round(time.Millisecond))
	var stale map[string]entry
	if !poll(30*time.Second, 200*time.Millisecond, func() bool {
		r, m, err := c.list(minority, false, 20*time.Second)
		lastR = r
		if err != nil || !strings.Contains(r.stderr, "stale") {
			return false
		}
		stale = m
		return true
	}) {
		t.Fatalf("(b) the minority's local list is not a stale read that answers: %s", lastR)
	}
	t.Logf("(b) %s answers a local read, on stderr: %q", minority.name, clip(lastR.stderr, 300))
	for _, s := range c.sessions() {
		if _, ok := stale[s]; !ok {
			t.Errorf("(b) the minority's stale list lacks session %s: %s", s, lastR)
		}
	}

	// The minority's own lifecycle change: recorded in its ledger, registry
	// write pending. The call must come back (not hang): it is bounded by
	// 20 s here; the node gives the registry about 5 to 10 s.
	minReason := "needs the build box back"
	r, out, err := c.block(minority, minority.session, minReason, 20*time.Second)
	if r.timedOut {
		t.Fatalf("(b) lifecycle on the minority hung for more than 20 s")
	}
	if err != nil {
		t.Fatalf("(b) lifecycle on the minority: %v", err)
	}
	t.Logf("(b) minority lifecycle: exit %d after %s, recorded %v, note %q, stderr %q", r.code,
		r.ret.Sub(r.call).Round(time.Millisecond), out.Recorded, out.Note, clip(r.stderr, 200))
	if !out.Recorded || out.Session.TaskState != "blocked" || out.Session.BlockerReason != minReason {
		t.Fatalf("(b) the minority did not record its lifecycle change locally: %s", r)
	}
	if r.code != exitPending {
		t.Errorf("(b) the minority's pending lifecycle change exited %d, want %d (its registry write cannot have committed without a quorum): %s", r.code, exitPending, r)
	}
	if !strings.Contains(out.Note, "pending") {
		t.Errorf("(b) the minority's lifecycle change has no pending note (its registry write cannot have committed without a quorum): %s", r)
	}
	_, m, err := c.list(minority, false, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if e := m[minority.session]; e.TaskState != "blocked" || e.BlockerReason != minReason || e.Source != "local" {
		t.Errorf("(b) the minority's local list shows its session as %+v, want blocked/%q from local", e, minReason)
	}

	// Heal: every node converges on one view, the minority's change included.
	healAt := time.Now()
	c.heal(minority)
	want := view{}
	for _, n := range c.nodes {
		want[n.session] = "active/"
	}
	want[majority[0].session] = "blocked/" + majReason
	want[minority.session] = "blocked/" + minReason
	took, ok, last := c.waitConverged(want, 90*time.Second)
	if !ok {
		t.Fatalf("after healing, the nodes did not converge on %s within 90 s: %s", want, last)
	}
	t.Logf("healed: every node's consistent list shows %s, %s after the heal", want, took.Round(time.Millisecond))

	// The minority's change reached the registry itself, not only the
	// owner's ledger and gossip: cut the owner off again and read its
	// session's registry record on the majority. The registry write is
	// retried in the background (with backoff), so if the record is not
	// there yet, heal, give it time, and look again (bounded).
	for round := 1; ; round++ {
		c.cut(minority)
		var rec entry
		if !poll(30*time.Second, 250*time.Millisecond, func() bool {
			_, m, err := c.list(majority[1], true, 15*time.Second)
			if err != nil {
				last = err.Error()
				return false
			}
			rec = m[minority.session]
			last = fmt.Sprintf("%+v", rec)
			return rec.Source == "registry" && !rec.Reachable
		}) {
			t.Fatalf("the majority does not show %s's session from the registry once it is cut off: %s", minority.name, last)
		}
		if rec.TaskState == "blocked" && rec.BlockerReason == minReason {
			t.Logf("the registry's record of %s is blocked/%q (round %d, %s after the first heal)",
				minority.session, minReason, round, time.Since(healAt).Round(time.Millisecond))
			break
		}
		if round == 3 {
			t.Fatalf("the minority's pending lifecycle change never reached the registry: its record is %s/%q", rec.TaskState, rec.BlockerReason)
		}
		t.Logf("round %d: the registry's record of %s is still %s/%q; healing and looking again", round, minority.session, rec.TaskState, rec.BlockerReason)
		c.heal(minority)
		if _, ok, last := c.waitConverged(want, 30*time.Second); !ok {
			t.Fatalf("after healing again, no convergence: %s", last)
		}
		time.Sleep(3 * time.Second)
	}
	c.heal(minority)
}

// seqOf maps a blocker_reason to its write number: "" (never written) is 0.
func seqOf(e entry) (int64, error) {
	if e.BlockerReason == "" {
		return 0, nil
	}
	s, ok := strings.CutPrefix(e.BlockerReason, "v")
	if !ok {
		return 0, fmt.Errorf("unexpected blocker_reason %q", e.BlockerReason)
	}
	return strconv.ParseInt(s, 10, 64)
}

// history collects operations from the clients.
type history struct {
	mu    sync.Mutex
	start time.Time
	ops   []porcupine.Operation
	stats map[string]int
}

func (h *history) at(t time.Time) int64 { return int64(t.Sub(h.start)) }

func (h *history) add(op porcupine.Operation, stat string) {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.stats[stat]++
	h.mu.Unlock()
}

func (h *history) count(stat string) {
	h.mu.Lock()
	h.stats[stat]++
	h.mu.Unlock()
}

// TestPartitionLinearizableHistory runs lifecycle writes (each node
// declares its own session blocked with reasons v1, v2, ...) and
// consistent reads (`agents list --consistent --json` from every node)
// while the registry leader is cut off and healed twice, and checks with
// porcupine that each session's blocker_reason behaves as one linearizable
// register. A write that fails, or whose registry write is left pending,
// has an unknown outcome (it may take effect at any later time, or never).
// Failed reads are left out.
//
// Two histories are checked, and both must be linearizable. The
// registry's: the writes and the reads whose entry came from the registry
// record. The roster's: every consistent read, whatever its entry's source
// (a consistent read returns the leader's registry records only).
func TestPartitionLinearizableHistory(t *testing.T) {
	c := newCluster(t, "lin")
	h := &history{start: time.Now(), stats: map[string]int{}}
	const workload = 40 * time.Second
	stop := time.Now().Add(workload)
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		// The writer of n's session.
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := int64(1); time.Now().Before(stop); k++ {
				reason := fmt.Sprintf("v%d", k)
				r, out, err := c.block(n, n.session, reason, 20*time.Second)
				op := porcupine.Operation{ClientId: i, Input: testsupport.RegInput{Key: n.session, Write: true, Seq: k},
					Call: h.at(r.call), Output: testsupport.RegOutput{}, Return: h.at(r.ret)}
				stat := "write ok"
				if err != nil || !out.Recorded || out.Note != "" {
					op.Return = math.MaxInt64 // unknown outcome
					stat = "write pending or failed"
				}
				h.add(op, stat)
				time.Sleep(time.Duration(50+mrand.IntN(100)) * time.Millisecond)
			}
		}()
		// A reader on n.
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				r, m, err := c.list(n, true, 20*time.Second)
				if err != nil {
					if r.code == exitNoLeader {
						h.count("read no leader (exit 8)")
					} else {
						h.count(fmt.Sprintf("read failed (exit %d)", r.code))
					}
					time.Sleep(100 * time.Millisecond)
					continue
				}
				h.count("read ok")
				for _, s := range c.nodes {
					e, ok := m[s.session]
					if !ok {
						t.Errorf("a consistent read on %s does not list %s", n.name, s.session)
						continue
					}
					seq, err := seqOf(e)
					if err != nil {
						t.Errorf("read on %s: %v", n.name, err)
						continue
					}
					h.add(porcupine.Operation{ClientId: 3 + i, Input: testsupport.RegInput{Key: s.session},
						Call: h.at(r.call), Output: testsupport.RegOutput{Seq: seq, Node: n.name, Source: e.Source}, Return: h.at(r.ret)}, "read op "+e.Source)
				}
				time.Sleep(time.Duration(mrand.IntN(50)) * time.Millisecond)
			}
		}()
	}
	// The nemesis: cut the leader off, heal, twice.
	for round := 1; round <= 2; round++ {
		time.Sleep(5 * time.Second)
		victim, err := c.leader()
		if err != nil {
			t.Logf("round %d: %v; cutting node1", round, err)
			victim = c.nodes[0]
		}
		t.Logf("round %d: cutting off %s at %s", round, victim.name, time.Since(h.start).Round(time.Millisecond))
		c.cut(victim)
		time.Sleep(10 * time.Second)
		c.heal(victim)
		t.Logf("round %d: healed %s at %s", round, victim.name, time.Since(h.start).Round(time.Millisecond))
	}
	wg.Wait()
	t.Logf("history: %d operations in %s; %v", len(h.ops), time.Since(h.start).Round(time.Millisecond), h.stats)

	var registryOps []porcupine.Operation
	for _, op := range h.ops {
		if op.Input.(testsupport.RegInput).Write || op.Output.(testsupport.RegOutput).Source == "registry" {
			registryOps = append(registryOps, op)
		}
	}
	if res, info := porcupine.CheckOperationsVerbose(testsupport.RegisterModel, registryOps, 30*time.Second); res == porcupine.Illegal {
		t.Errorf("porcupine: the registry's history (writes and %d registry reads) is not linearizable (visualization: %s)",
			h.stats["read op registry"], visualize(info, "registry"))
	} else {
		t.Logf("porcupine: the registry's history (writes and %d registry reads): %s", h.stats["read op registry"], res)
	}
	res, info := porcupine.CheckOperationsVerbose(testsupport.RegisterModel, h.ops, 30*time.Second)
	if res == porcupine.Illegal {
		t.Errorf("porcupine: the roster's history (every consistent read) is not linearizable (visualization: %s)", visualize(info, "roster"))
	} else {
		t.Logf("porcupine: the roster's history (every consistent read): %s", res)
	}
}

// visualize writes porcupine's visualization of a failed check to a file in
// the temp dir (kept for the reader) and returns its path.
func visualize(info porcupine.LinearizationInfo, what string) string {
	path := filepath.Join(os.TempDir(), fmt.Sprintf("harn-partition-%s-%s.html", runID, what))
	f, err := os.Create(path)
	if err != nil {
		return "not written: " + err.Error()
	}
	defer f.Close()
	if err := porcupine.Visualize(testsupport.RegisterModel, info, f); err != nil {
		return "not written: " + err.Error()
	}
	return path
}
