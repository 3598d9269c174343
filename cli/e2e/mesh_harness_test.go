package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Helpers for real multi-node meshes on 127.0.0.1: every node is an env
// of its own (data dir, socket, clean environment) with fixed ports, so
// that a restarted node comes back at the address the others know.

// meshTimeout bounds a mesh-wide change: convergence, failure detection,
// an election, a rejoin. It bounds; it never measures.
const meshTimeout = 30 * time.Second

// meshNode is one `harn node` of a mesh.
type meshNode struct {
	*env
	name                string
	gossip, raft, rpc   int
	flags               []string // role, join and key flags
	proc                *nodeProc
	gossipAddr, raftStr string
}

// newMeshNode makes a node named name with free ports; flags are added to
// its `harn node` command line.
func newMeshNode(t *testing.T, name string, flags ...string) *meshNode {
	t.Helper()
	p := freePorts(t, 3)
	m := &meshNode{env: newEnv(t), name: name, gossip: p[0], raft: p[1], rpc: p[2], flags: flags}
	// Runs before the env's shutdown: stop the node, then read its logs.
	t.Cleanup(m.checkLogs)
	m.gossipAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(m.gossip))
	m.raftStr = net.JoinHostPort("127.0.0.1", strconv.Itoa(m.raft))
	return m
}

// nodeArgs is the node's mesh command line (after data dir and socket).
func (m *meshNode) nodeArgs() []string {
	return append([]string{"--name", m.name, "--bind", "127.0.0.1",
		"--gossip-port", strconv.Itoa(m.gossip), "--raft-port", strconv.Itoa(m.raft),
		"--rpc-port", strconv.Itoa(m.rpc), "--http-port", "0",
		"--mesh-profile", "local", "--raft-profile", "fast"}, m.flags...)
}

// spawn starts the node without waiting for it; ready waits.
func (m *meshNode) spawn() { m.proc = m.spawnNode(m.nodeArgs()...) }

// ready waits until the node answers on its socket. One that does not
// in time gets SIGQUIT, so that its log shows where it is stuck.
func (m *meshNode) ready() {
	m.t.Helper()
	p := m.proc
	deadline := time.Now().Add(readyTimeout)
	for i := 0; time.Now().Before(deadline) && i < 2000; i++ {
		if p.exited() {
			b, _ := os.ReadFile(p.log)
			m.t.Fatalf("%s exited before answering (code %d): %s", m.name, p.cmd.ProcessState.ExitCode(), b)
		}
		if st, ok := m.nodeStatus(); ok && st.PID == p.pid() {
			return
		}
		time.Sleep(pollEvery)
	}
	var diag strings.Builder
	for _, f := range []string{"status", "wchan", "cmdline", "stat"} {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/%s", p.pid(), f))
		fmt.Fprintf(&diag, "/proc/%d/%s: %s\n", p.pid(), f, b)
	}
	if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", p.pid())); err == nil {
		for _, en := range ents {
			w, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/wchan", p.pid(), en.Name()))
			st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", p.pid(), en.Name()))
			fmt.Fprintf(&diag, "task %s wchan %s stat %s\n", en.Name(), w, st)
		}
	}
	p.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
	b, _ := os.ReadFile(p.log)
	m.t.Fatalf("%s (pid %d) did not answer within %v; %s; %s\nits log after SIGQUIT:\n%s", m.name, p.pid(), readyTimeout, p.cmd.ProcessState, diag.String(), b)
}

// start starts the node (again: same name, data dir and ports) and waits
// until it answers on its socket.
func (m *meshNode) start() {
	m.spawn()
	m.ready()
}

func (m *meshNode) kill9() { m.env.kill9(m.proc) }

func (m *meshNode) stop() { m.stopNode(m.proc) }

// freePorts returns n distinct ports free for TCP and UDP on 127.0.0.1.
// The listeners stay open until all are chosen, so none repeats.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var out []int
	var closers []func()
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	// The ports come from below the kernel's ephemeral range (32768 and
	// up on Linux): a port the kernel hands out as some connection's
	// source port between this pick and the node's bind (or its restart
	// on the same ports) cannot be one of these.
	for i := 0; i < 2000 && len(out) < n; i++ {
		port := 20000 + rand.IntN(12000)
		if slices.Contains(out, port) {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // taken: try another
		}
		closers = append(closers, func() { l.Close() })
		u, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // the UDP side is taken: try another
		}
		closers = append(closers, func() { u.Close() })
		out = append(out, port)
	}
	if len(out) < n {
		t.Fatalf("found only %d free ports", len(out))
	}
	return out
}

// memberJSON is one member of `harn mesh members --json`.
type memberJSON struct {
	Name   string `json:"name"`
	Addr   string `json:"addr"`
	Status string `json:"status"`
	Role   string `json:"role"`
	Since  string `json:"since"`
}

// raftJSON is `harn mesh raft --json`.
type raftJSON struct {
	Leader  string `json:"leader"`
	Term    uint64 `json:"term"`
	State   string `json:"state"`
	Servers []struct {
		ID    string `json:"id"`
		Addr  string `json:"addr"`
		Voter bool   `json:"voter"`
		// Stale marks a server whose raft address differs from the one
		// it advertises in the mesh (Advertises).
		Stale      bool   `json:"stale"`
		Advertises string `json:"advertises"`
	} `json:"servers"`
}

func (r raftJSON) voters() []string {
	var out []string
	for _, s := range r.Servers {
		if s.Voter {
			out = append(out, s.ID)
		}
	}
	sort.Strings(out)
	return out
}

// rosterJSON is one session of `harn agents list --json`.
type rosterJSON struct {
	sessionJSON
	Node             string `json:"node"`
	Reachable        bool   `json:"reachable"`
	UnreachableSince string `json:"unreachable_since"`
	Source           string `json:"source"`
}

func (r rosterJSON) String() string {
	return fmt.Sprintf("{%s node=%s reachable=%v since=%q source=%s activity=%s task_state=%s reason=%q}",
		r.SessionID, r.Node, r.Reachable, r.UnreachableSince, r.Source, r.Activity, r.TaskState, r.BlockerReason)
}

// try runs a harn command against this node and decodes its JSON stdout
// into v; it reports failure instead of failing the test (for polling).
func (m *meshNode) try(v any, args ...string) (bool, string) {
	m.t.Helper()
	r := m.harn("", args...)
	if r.code != 0 {
		return false, fmt.Sprintf("%s: %v", m.name, r)
	}
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		return false, fmt.Sprintf("%s: decode: %v: %s", m.name, err, r.stdout)
	}
	return true, ""
}

func (m *meshNode) members() ([]memberJSON, bool, string) {
	var ms []memberJSON
	ok, why := m.try(&ms, "mesh", "members", "--json")
	return ms, ok, why
}

func (m *meshNode) raftState() (raftJSON, bool, string) {
	var r raftJSON
	ok, why := m.try(&r, "mesh", "raft", "--json")
	return r, ok, why
}

// roster is `agents list --json` (with --consistent when asked).
func (m *meshNode) roster(consistent bool) ([]rosterJSON, bool, string) {
	args := []string{"agents", "list", "--json"}
	if consistent {
		args = append(args, "--consistent")
	}
	var ss []rosterJSON
	ok, why := m.try(&ss, args...)
	return ss, ok, why
}

// session finds id in this node's roster.
func (m *meshNode) session(consistent bool, id string) (rosterJSON, bool, string) {
	ss, ok, why := m.roster(consistent)
	if !ok {
		return rosterJSON{}, false, why
	}
	for _, s := range ss {
		if s.SessionID == id {
			return s, true, ""
		}
	}
	return rosterJSON{}, false, fmt.Sprintf("%s: %s not in %v", m.name, id, ss)
}

func memberOf(ms []memberJSON, name string) (memberJSON, bool) {
	for _, mb := range ms {
		if mb.Name == name {
			return mb, true
		}
	}
	return memberJSON{}, false
}

// startServers starts n servers that all expect each other
// (--server --bootstrap-expect n, each joining the others) and waits
// until the mesh and the registry have formed. The mesh is plaintext
// (--insecure-mesh); trustedMesh builds one with tokens.
func startServers(t *testing.T, n int, extra ...string) []*meshNode {
	t.Helper()
	nodes := make([]*meshNode, n)
	for i := range nodes {
		nodes[i] = newMeshNode(t, fmt.Sprintf("srv-%c", 'a'+i), extra...)
	}
	for i, m := range nodes {
		m.flags = append(m.flags, "--insecure-mesh", "--server", "--bootstrap-expect", strconv.Itoa(n))
		for j, o := range nodes {
			if j != i {
				m.flags = append(m.flags, "--join", o.gossipAddr)
			}
		}
	}
	for _, m := range nodes {
		m.spawn()
	}
	for _, m := range nodes {
		m.ready()
	}
	waitFormed(t, nodes, nodes)
	return nodes
}

// waitFormed waits until every node of alive lists each of them alive
// with its role, and reports the same leader, one of voters, with
// exactly voters as the registry's voters. It returns the leader.
func waitFormed(t *testing.T, alive, voters []*meshNode) string {
	t.Helper()
	var want []string
	for _, v := range voters {
		want = append(want, v.name)
	}
	sort.Strings(want)
	leader := ""
	eventually(t, meshTimeout, "mesh and registry formed", func() (bool, string) {
		leader = ""
		for _, m := range alive {
			ms, ok, why := m.members()
			if !ok {
				return false, why
			}
			for _, o := range alive {
				mb, found := memberOf(ms, o.name)
				if !found || mb.Status != "alive" {
					return false, fmt.Sprintf("%s sees %s as %+v", m.name, o.name, mb)
				}
			}
			r, ok, why := m.raftState()
			if !ok {
				return false, why
			}
			if r.Leader == "" || (leader != "" && r.Leader != leader) {
				return false, fmt.Sprintf("%s: leader %q (others: %q)", m.name, r.Leader, leader)
			}
			leader = r.Leader
			if got := r.voters(); strings.Join(got, ",") != strings.Join(want, ",") {
				return false, fmt.Sprintf("%s: voters %v, want %v", m.name, got, want)
			}
		}
		return true, ""
	})
	return leader
}

// leaderOf waits for the leader the given nodes agree on.
func leaderOf(t *testing.T, nodes []*meshNode) string {
	t.Helper()
	leader := ""
	eventually(t, meshTimeout, "an agreed leader", func() (bool, string) {
		leader = ""
		for _, m := range nodes {
			r, ok, why := m.raftState()
			if !ok {
				return false, why
			}
			if r.Leader == "" || (leader != "" && r.Leader != leader) {
				return false, fmt.Sprintf("%s: leader %q (others: %q)", m.name, r.Leader, leader)
			}
			leader = r.Leader
		}
		return true, ""
	})
	return leader
}

func byName(nodes []*meshNode, name string) *meshNode {
	for _, m := range nodes {
		if m.name == name {
			return m
		}
	}
	return nil
}

// others is nodes without the ones named.
func others(nodes []*meshNode, not ...string) []*meshNode {
	var out []*meshNode
	for _, m := range nodes {
		skip := false
		for _, n := range not {
			skip = skip || m.name == n
		}
		if !skip {
			out = append(out, m)
		}
	}
	return out
}

// runFor runs harn with args as a child that must exit by itself within
// d; one that does not is killed and waited for, and the test fails.
func runFor(t *testing.T, d time.Duration, environ []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, harnBin, args...)
	cmd.Env = environ
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	r := result{args: args, stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		t.Fatalf("harn %s did not exit within %v (killed); stderr: %s", strings.Join(args, " "), d, errb.String())
	case errors.As(err, &ee) && ee.Exited():
		r.code = ee.ExitCode()
	default:
		t.Fatalf("harn %s: %v (stderr: %s)", strings.Join(args, " "), err, errb.String())
	}
	return r
}

// startClaudeSession runs the Claude Code hooks of a session that starts
// and opens a turn on node m (the test process is the agent).
func startClaudeSession(m *meshNode, sid, cwd string) {
	m.t.Helper()
	m.hook("claude-code", claudeStart(sid, cwd))
	m.hook("claude-code", claudePrompt(sid, cwd))
}

// checkLogs stops the node and fails the test when one of its logs
// shows a panic. HARN_E2E_MESH_LOGS names a directory to copy them to.
func (m *meshNode) checkLogs() {
	m.mu.Lock()
	procs := append([]*nodeProc(nil), m.nodes...)
	m.mu.Unlock()
	for i, p := range procs {
		if !p.exited() {
			m.stopNode(p)
		}
		b, err := os.ReadFile(p.log)
		if err != nil {
			continue
		}
		if dir := os.Getenv("HARN_E2E_MESH_LOGS"); dir != "" {
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%s-%d.log", m.t.Name(), m.name, i)), b, 0o600)
		}
		if bytes.Contains(b, []byte("panic:")) || bytes.Contains(b, []byte("fatal error:")) {
			m.t.Errorf("%s (pid %d) log shows a crash:\n%s", m.name, p.pid(), b)
		}
	}
}
