package e2e

import (
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// Real multi-process meshes: three `harn node --server --bootstrap-expect 3`
// on 127.0.0.1, each joining the others, with the fast local profiles.

// claudePermission is a PermissionRequest for a Bash call.
func claudePermission(sid, cwd string) string {
	return `{` + claudeCommon(sid, cwd) + `,"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"make deploy","description":"Deploy"}}`
}

// TestMeshPropagation: a session started by a hook on one node, and its
// state changes, reach the other nodes' rosters; members and raft views
// agree everywhere.
func TestMeshPropagation(t *testing.T) {
	nodes := startServers(t, 3)
	a, rest := nodes[0], nodes[1:]
	cwd := t.TempDir()
	sid := "mesh-prop-7c1e-4b2a"

	startClaudeSession(a, sid, cwd)
	a.hook("claude-code", claudePreBash(sid, cwd, "p1"))
	a.hook("claude-code", claudePermission(sid, cwd))
	if st := a.status(sid); st.Activity != "needs_input" {
		t.Fatalf("on the owner: activity %q, want needs_input", st.Activity)
	}
	for _, m := range rest {
		eventually(t, stateTimeout, m.name+" sees the session need input", func() (bool, string) {
			s, ok, why := m.session(false, sid)
			if !ok {
				return false, why
			}
			return s.Node == a.name && s.Reachable && s.Activity == "needs_input", s.String()
		})
	}

	reason := "waiting for the staging database"
	var lc struct {
		Recorded bool   `json:"recorded"`
		Note     string `json:"note"`
	}
	mustJSON(t, a.ok("agents", "lifecycle", "blocked", "--reason", reason, "--session", sid, "--json"), &lc)
	if !lc.Recorded {
		t.Errorf("lifecycle blocked: not recorded (note %q)", lc.Note)
	}
	if lc.Note != "" {
		// Acknowledged all the same; an election on a loaded machine can
		// leave the registry write pending (and retried).
		t.Logf("lifecycle blocked: %s", lc.Note)
	}
	for _, m := range rest {
		eventually(t, stateTimeout, m.name+" sees the session blocked", func() (bool, string) {
			s, ok, why := m.session(false, sid)
			if !ok {
				return false, why
			}
			return s.Node == a.name && s.Reachable && s.TaskState == "blocked" && s.BlockerReason == reason, s.String()
		})
	}

	// Every node lists three alive servers; the registry has three voters
	// and one leader, the same on all, which is the one node that says it
	// leads. (Polled: an election may be under way on a loaded machine.)
	eventually(t, meshTimeout, "members and raft agree on every node", func() (bool, string) {
		leader, leading := "", 0
		for _, m := range nodes {
			ms, ok, why := m.members()
			if !ok {
				return false, why
			}
			if len(ms) != 3 {
				return false, fmt.Sprintf("%s: %d members, want 3: %+v", m.name, len(ms), ms)
			}
			for _, o := range nodes {
				if mb, found := memberOf(ms, o.name); !found || mb.Status != "alive" || mb.Role != "server" {
					return false, fmt.Sprintf("%s sees %s as %+v (found %v); want alive server", m.name, o.name, mb, found)
				}
			}
			r, ok, why := m.raftState()
			if !ok {
				return false, why
			}
			if len(r.Servers) != 3 || len(r.voters()) != 3 {
				return false, fmt.Sprintf("%s: servers %+v; want 3 voters", m.name, r.Servers)
			}
			if r.Leader == "" || byName(nodes, r.Leader) == nil || (leader != "" && r.Leader != leader) {
				return false, fmt.Sprintf("%s: leader %q; others say %q", m.name, r.Leader, leader)
			}
			leader = r.Leader
			if r.State == "Leader" {
				leading++
				if r.Leader != m.name {
					return false, fmt.Sprintf("%s leads but names %q as leader", m.name, r.Leader)
				}
			}
		}
		return leading == 1, fmt.Sprintf("%d nodes say they lead; want 1", leading)
	})
}

// TestMeshKillNonLeader: a killed non-leader's session stays listed,
// unreachable with the time since; reads of it say the live detail is
// unavailable; after a restart it is reachable again.
func TestMeshKillNonLeader(t *testing.T) {
	nodes := startServers(t, 3)
	leader := leaderOf(t, nodes)
	x := others(nodes, leader)[0]
	rest := others(nodes, x.name)
	cwd := t.TempDir()
	sid := "mesh-kill-3f9a-41d0"
	startClaudeSession(x, sid, cwd)
	// The registry of every other node holds it: status resolves a remote
	// session through the local replica.
	for _, m := range rest {
		eventually(t, stateTimeout, m.name+" has the session in its registry replica", func() (bool, string) {
			r := m.harn("", "agents", "status", sid, "--json")
			return r.code == 0, r.String()
		})
	}
	if r, ok, _ := rest[0].raftState(); ok && r.Leader == x.name {
		t.Logf("note: %s became the leader before the kill", x.name)
	}

	killedAt := time.Now()
	x.kill9()
	for _, m := range rest {
		eventually(t, meshTimeout, m.name+" lists the session unreachable", func() (bool, string) {
			s, ok, why := m.session(false, sid)
			if !ok {
				return false, why
			}
			return s.Node == x.name && !s.Reachable && s.UnreachableSince != "", s.String()
		})
		s, _, _ := m.session(false, sid)
		// Since the kill (a second of slack for the timestamps' rounding).
		if since, err := time.Parse(time.RFC3339Nano, s.UnreachableSince); err != nil {
			t.Errorf("%s: unreachable_since %q: %v", m.name, s.UnreachableSince, err)
		} else if since.Before(killedAt.Add(-time.Second)) || since.After(time.Now().Add(time.Second)) {
			t.Errorf("%s: unreachable_since %v; the node was killed at %v", m.name, since, killedAt)
		}
		// Activity reaches the registry coalesced (ActivityFlush), so the
		// record may still say idle: only where the state comes from is
		// fixed.
		if s.Source != "registry" || s.TaskState != "active" || s.Ended {
			t.Errorf("%s: the dead node's session: %v; want the registry's record, active", m.name, s)
		}
		ms, ok, why := m.members()
		if !ok {
			t.Fatal(why)
		}
		if mb, _ := memberOf(ms, x.name); mb.Status != "dead" {
			t.Errorf("%s sees the killed %s as %+v; want dead", m.name, x.name, mb)
		}
		for _, cmd := range []string{"status", "show", "trace"} {
			r := m.harn("", "agents", cmd, sid)
			if r.code != 0 {
				t.Fatalf("%s of a dead node's session must exit 0: %v", cmd, r)
			}
			if !strings.Contains(r.stderr, "live detail unavailable") || !strings.Contains(r.stderr, x.name) ||
				strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("%s: %s stderr %q; want one line: the live detail of %s is unavailable", m.name, cmd, r.stderr, x.name)
			}
			if cmd != "trace" && !strings.Contains(r.stdout, sid) {
				t.Errorf("%s: %s stdout %q lacks the session", m.name, cmd, r.stdout)
			}
		}
		if out := m.ok("agents", "list"); !strings.Contains(out, x.name+" (unreachable") {
			t.Errorf("%s: the table does not say %s is unreachable:\n%s", m.name, x.name, out)
		}
	}

	x.start()
	for _, m := range rest {
		eventually(t, meshTimeout, m.name+" lists the session reachable again", func() (bool, string) {
			s, ok, why := m.session(false, sid)
			if !ok {
				return false, why
			}
			return s.Node == x.name && s.Reachable && s.UnreachableSince == "", s.String()
		})
		eventually(t, meshTimeout, m.name+" sees "+x.name+" alive", func() (bool, string) {
			ms, ok, why := m.members()
			if !ok {
				return false, why
			}
			mb, _ := memberOf(ms, x.name)
			return mb.Status == "alive", fmt.Sprintf("%+v", ms)
		})
		eventually(t, stateTimeout, m.name+" reads the live detail again", func() (bool, string) {
			r := m.harn("", "agents", "status", sid)
			return r.code == 0 && r.stderr == "", r.String()
		})
	}
}

// lcState is a lifecycle state a command declared.
type lcState struct{ state, reason string }

// TestMeshKillLeader: lifecycle changes on a non-leader's session go on
// while the leader is killed; the last acknowledged one is what a
// consistent read shows, and all nodes converge after the restart.
func TestMeshKillLeader(t *testing.T) {
	nodes := startServers(t, 3)
	oldLeader := leaderOf(t, nodes)
	l := byName(nodes, oldLeader)
	x := others(nodes, oldLeader)[0]
	y := others(nodes, oldLeader, x.name)[0]
	cwd := t.TempDir()
	sid := "mesh-lead-5e2b-4c7d"
	startClaudeSession(x, sid, cwd)

	i := 0
	next := func() lcState {
		i++
		if i%2 == 0 {
			return lcState{"active", ""}
		}
		return lcState{"blocked", fmt.Sprintf("blocked #%d", i)}
	}
	var acked lcState
	lastOK := false
	acks := 0
	declare := func() {
		want := next()
		args := []string{"agents", "lifecycle", want.state, "--session", sid, "--json"}
		if want.reason != "" {
			args = append(args, "--reason", want.reason)
		}
		r := x.harn("", args...)
		lastOK = r.code == 0
		if !lastOK {
			t.Logf("not acknowledged: %v", r)
			return
		}
		var out struct {
			Recorded bool   `json:"recorded"`
			Note     string `json:"note"`
		}
		mustJSON(t, r.stdout, &out)
		if !out.Recorded {
			t.Fatalf("a new lifecycle state was not recorded: %s", r.stdout)
		}
		if out.Note != "" {
			t.Logf("acknowledged with a note: %s", out.Note)
		}
		acked = want
		acks++
	}
	for k := 0; k < 3; k++ {
		declare()
	}
	l.kill9()
	after := 0
	deadline := time.Now().Add(meshTimeout)
	// Go on until three changes were acknowledged after the kill, the
	// last one issued among them, ending blocked: a state the session
	// cannot show by default.
	done := func() bool { return after >= 3 && lastOK && acked.state == "blocked" }
	for k := 0; k < 40 && time.Now().Before(deadline) && !done(); k++ {
		declare()
		if lastOK {
			after++
		}
	}
	if !done() {
		t.Fatalf("after the leader's kill: %d changes acknowledged, the last issued ok %v, last acknowledged %+v", after, lastOK, acked)
	}

	t.Logf("%d changes issued, %d acknowledged (%d after the kill); last acknowledged %+v", i, acks, after, acked)

	survivors := []*meshNode{x, y}
	newLeader := leaderOf(t, survivors)
	if newLeader == oldLeader {
		t.Fatalf("the killed %s is still the leader", oldLeader)
	}
	match := func(s rosterJSON) bool {
		return s.TaskState == acked.state && s.BlockerReason == acked.reason && s.Node == x.name && s.Reachable
	}
	eventually(t, meshTimeout, y.name+" reads the last acknowledged state consistently", func() (bool, string) {
		s, ok, why := y.session(true, sid)
		if !ok {
			return false, why
		}
		return match(s), fmt.Sprintf("%v; want %+v", s, acked)
	})

	l.start()
	waitFormed(t, nodes, nodes)
	type view struct {
		Node, TaskState, Reason string
		Reachable, Ended        bool
	}
	eventually(t, meshTimeout, "all three converge", func() (bool, string) {
		var first *view
		var all []string
		for _, m := range nodes {
			s, ok, why := m.session(true, sid)
			if !ok {
				return false, why
			}
			v := view{s.Node, s.TaskState, s.BlockerReason, s.Reachable, s.Ended}
			all = append(all, fmt.Sprintf("%s: %v", m.name, s))
			if !match(s) || (first != nil && v != *first) {
				return false, strings.Join(all, "; ") + fmt.Sprintf("; want %+v", acked)
			}
			first = &v
		}
		return true, ""
	})

	// The registry itself holds it: with the owner gone, the others read
	// the registry's record.
	x.stop()
	for _, m := range []*meshNode{l, y} {
		eventually(t, meshTimeout, m.name+" reads the registry's record of the stopped owner", func() (bool, string) {
			s, ok, why := m.session(true, sid)
			if !ok {
				return false, why
			}
			return s.Source == "registry" && !s.Reachable && s.TaskState == acked.state && s.BlockerReason == acked.reason,
				fmt.Sprintf("%v; want %+v from the registry", s, acked)
		})
	}
}

// TestMeshWrongGossipKey: a node with another gossip key, or none, cannot
// join a keyed mesh: `harn node` exits 2 at once and says the keys differ.
func TestMeshWrongGossipKey(t *testing.T) {
	keygen := func() string {
		e := newEnv(t)
		k := strings.TrimSpace(e.ok("keygen"))
		if len(k) != 44 {
			t.Fatalf("keygen printed %q; want a base64 32-byte key", k)
		}
		return k
	}
	key, other := keygen(), keygen()
	if key == other {
		t.Fatal("keygen printed the same key twice")
	}
	nodes := startServers(t, 2, "--gossip-key", key)

	for _, tc := range []struct{ name, key string }{{"other-key", other}, {"no-key", ""}} {
		in := newMeshNode(t, "intruder-"+tc.name, "--insecure-mesh", "--join", nodes[0].gossipAddr, "--join", nodes[1].gossipAddr)
		if tc.key != "" {
			in.flags = append(in.flags, "--gossip-key", tc.key)
		}
		args := append([]string{"node", "--data-dir", in.dataDir, "--socket", in.socket}, in.nodeArgs()...)
		// At the default log level the node's logs come first; the error
		// is one line, the last.
		r := runFor(t, meshTimeout, in.base, args...)
		if r.code != 2 {
			t.Fatalf("%s: exit %d, want 2: %v", tc.name, r.code, r)
		}
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		var errLines []string
		for _, line := range lines {
			if strings.HasPrefix(line, "harn: ") {
				errLines = append(errLines, line)
			}
		}
		last := lines[len(lines)-1]
		if len(errLines) != 1 || errLines[0] != last || !strings.Contains(last, "gossip keys differ") {
			t.Errorf("%s: want one last line `harn: ... gossip keys differ ...` on stderr, got:\n%s", tc.name, r.stderr)
		}
		// With the logs quiet, that line is all of stderr.
		r = runFor(t, meshTimeout, in.base, append(args, "--log-level", "error")...)
		if r.code != 2 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "gossip keys differ") {
			t.Errorf("%s with --log-level error: exit %d, want 2 and one line saying the keys differ: %q", tc.name, r.code, r.stderr)
		}
		oneLineErr(t, r)
		t.Logf("%s: %s", tc.name, last)
	}
	for _, m := range nodes {
		ms, ok, why := m.members()
		if !ok {
			t.Fatal(why)
		}
		if len(ms) != 2 {
			t.Errorf("%s lists %d members, want the 2 keyed ones: %+v", m.name, len(ms), ms)
		}
		for _, o := range nodes {
			// Alive; suspect at worst, on a loaded machine.
			if mb, _ := memberOf(ms, o.name); mb.Status != "alive" && mb.Status != "suspect" {
				t.Errorf("%s sees %s as %+v", m.name, o.name, mb)
			}
		}
	}
}

// TestMeshNonVoterJoins: a node without --server holds no raft log: it
// is in no node's raft configuration (`harn mesh raft --json` lists the
// servers alone), follows the registry from a server, and serves the
// roster of the others' sessions; a node with --replica is a non-voting
// raft member.
func TestMeshNonVoterJoins(t *testing.T) {
	nodes := startServers(t, 3)
	a := nodes[0]
	cwd := t.TempDir()
	sid := "mesh-nonvoter-1d4c-49e8"
	startClaudeSession(a, sid, cwd)

	d := newMeshNode(t, "replica-d", "--insecure-mesh")
	rep := newMeshNode(t, "replica-r", "--insecure-mesh", "--replica")
	for _, m := range nodes {
		d.flags = append(d.flags, "--join", m.gossipAddr)
		rep.flags = append(rep.flags, "--join", m.gossipAddr)
	}
	d.start()
	rep.start()
	all := append(append([]*meshNode(nil), nodes...), d, rep)
	eventually(t, meshTimeout, "the node is in no raft configuration, the replica a non-voter in every one", func() (bool, string) {
		for _, m := range all {
			r, ok, why := m.raftState()
			if !ok {
				return false, why
			}
			found, node := false, false
			for _, s := range r.Servers {
				if s.ID == rep.name {
					found = !s.Voter && s.Addr == rep.raftStr
				}
				node = node || s.ID == d.name
			}
			if !found || node || len(r.voters()) != 3 || len(r.Servers) != 4 || r.Leader == "" {
				return false, fmt.Sprintf("%s: %+v", m.name, r)
			}
		}
		return true, ""
	})
	if r, _, _ := d.raftState(); r.State != "Watch" {
		t.Errorf("the node's raft state %q, want Watch", r.State)
	}
	eventually(t, meshTimeout, a.name+" sees the replica as an alive client", func() (bool, string) {
		ms, ok, why := a.members()
		if !ok {
			return false, why
		}
		mb, _ := memberOf(ms, d.name)
		return mb.Status == "alive" && mb.Role == "client", fmt.Sprintf("%+v", ms)
	})
	eventually(t, meshTimeout, "the replica lists the session", func() (bool, string) {
		s, ok, why := d.session(false, sid)
		if !ok {
			return false, why
		}
		return s.Node == a.name && s.Reachable && s.Activity == "working", s.String()
	})
	eventually(t, meshTimeout, "a consistent read on the replica", func() (bool, string) {
		s, ok, why := d.session(true, sid)
		return ok && s.Node == a.name, why
	})
	r := d.harn("", "agents", "status", sid, "--json")
	if r.code != 0 || r.stderr != "" {
		t.Errorf("status on the replica: %v", r)
	}
}

// TestMeshLeaveIsLeft: `harn mesh leave` makes the others list the node
// as left, not dead, also once it has stopped; its sessions stay listed,
// unreachable.
func TestMeshLeaveIsLeft(t *testing.T) {
	nodes := startServers(t, 3)
	c, rest := nodes[2], nodes[:2]
	cwd := t.TempDir()
	sid := "mesh-leave-6a0f-4d3b"
	startClaudeSession(c, sid, cwd)
	for _, m := range rest {
		eventually(t, stateTimeout, m.name+" has the session in its registry replica", func() (bool, string) {
			r := m.harn("", "agents", "status", sid, "--json")
			return r.code == 0, r.String()
		})
	}

	c.ok("mesh", "leave")
	statusOf := func(m *meshNode) (string, bool, string) {
		ms, ok, why := m.members()
		if !ok {
			return "", false, why
		}
		mb, _ := memberOf(ms, c.name)
		return mb.Status, true, fmt.Sprintf("%+v", ms)
	}
	for _, m := range rest {
		eventually(t, meshTimeout, m.name+" lists "+c.name+" as left", func() (bool, string) {
			st, ok, why := statusOf(m)
			if ok && st == "dead" {
				t.Fatalf("%s lists the departing %s as dead: %s", m.name, c.name, why)
			}
			return ok && st == "left", why
		})
	}
	c.stop()
	// Failure detection of the local profile takes well under this
	// window; a left member must not turn dead meanwhile.
	end := time.Now().Add(2 * time.Second)
	for k := 0; k < 100 && time.Now().Before(end); k++ {
		for _, m := range rest {
			if st, ok, why := statusOf(m); !ok || st != "left" {
				t.Fatalf("%s lists the stopped %s as %q; want left: %s", m.name, c.name, st, why)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, m := range rest {
		s, ok, why := m.session(false, sid)
		if !ok {
			t.Fatalf("the departed node's session is gone from %s: %s", m.name, why)
		}
		if s.Reachable || s.UnreachableSince == "" || s.Node != c.name {
			t.Errorf("%s: the departed node's session: %v; want unreachable with the time since", m.name, s)
		}
	}
}

// TestMeshStopWhileJoining: a node stopped (SIGTERM) while its first join
// is still waiting for a seed shuts down gracefully and exits 0. Its
// local socket already answers then, so an operator or a supervisor can
// well stop it in that window. The seed here accepts the TCP connection
// and never answers, which holds the join for the profile's TCP timeout
// (500 ms in the local profile; the poll of waitReady is far shorter).
func TestMeshStopWhileJoining(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan net.Conn, 16)
	go func() {
		for i := 0; i < 16; i++ {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held <- c
		}
	}()
	t.Cleanup(func() {
		l.Close()
		for i := 0; i < cap(held); i++ {
			select {
			case c := <-held:
				c.Close()
			default:
				return
			}
		}
	})
	m := newMeshNode(t, "joiner", "--insecure-mesh", "--join", l.Addr().String())
	p := m.spawnNode(m.nodeArgs()...)
	m.waitReady(p)
	m.stopNode(p)
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		b, _ := os.ReadFile(p.log)
		t.Fatalf("harn node exited %d (%v) on SIGTERM during its join; want a graceful exit 0\n%s", code, p.cmd.ProcessState, b)
	}
}
