package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// launcherConfig writes a config file that defines s0's launchers: fake
// (the fake agent, streaming JSON out) and fakestream (also streaming JSON
// in), plus extra NAME: argv. It returns the env that points s0 at it.
func launcherConfig(t *testing.T, extra map[string][]string) string {
	t.Helper()
	fake := buildFakeAgent(t)
	defs := map[string][]string{
		"fake":       {fake, "-p", "--output-format", "stream-json"},
		"fakestream": {fake, "-p", "--output-format", "stream-json", "--input-format", "stream-json"},
	}
	for k, v := range extra {
		defs[k] = v
	}
	var b strings.Builder
	b.WriteString("# s0's launchers\n[launchers]\n")
	for name, argv := range defs {
		j, _ := json.Marshal(argv)
		fmt.Fprintf(&b, "%s = %s\n", name, j)
	}
	path := filepath.Join(t.TempDir(), "harn.conf")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return "HARN_CONFIG=" + path
}

// remoteMesh is trustedMesh with s0's --remote-control policy, its
// --remote-exec list, the launchers of launcherConfig and a workspace
// (workspaceOf), where the tasks n1 starts there work.
func remoteMesh(t *testing.T, policy, remoteExec string, s0Env ...string) (s0, n1 *meshNode) {
	t.Helper()
	env := append([]string{launcherConfig(t, nil), "HARN_REMOTE_CONTROL=" + policy, "HARN_REMOTE_EXEC=" + remoteExec,
		"HARN_WORKSPACE=" + t.TempDir()}, s0Env...)
	return trustedMesh(t, env...)
}

// workspaceOf is the first --workspace m's environment names.
func workspaceOf(t *testing.T, m *meshNode) string {
	t.Helper()
	for _, kv := range m.base {
		if v, ok := strings.CutPrefix(kv, "HARN_WORKSPACE="); ok {
			return strings.Split(v, ",")[0]
		}
	}
	t.Fatalf("%s has no HARN_WORKSPACE", m.name)
	return ""
}

// operatorAt is how a node records an action of this test's user made
// on node: `alice (uid 1000)@laptop`.
func operatorAt(t *testing.T, node string) string {
	t.Helper()
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s (uid %s)@%s", u.Username, u.Uid, node)
}

// Over the mutually authenticated mesh, a task on another node's runtime
// is started, followed, steered, superseded and cancelled from this node: the actions route to
// the owner, which runs the agent, and its answers come back with the same
// shape as a local call's.
func TestRemoteTaskStartSteerSupersedeAndCancelOverMutualTLS(t *testing.T) {
	s0, n1 := remoteMesh(t, "n1", "fake,fakestream")

	remote := func(args ...string) taskResultJSON {
		t.Helper()
		var r taskResultJSON
		mustJSON(t, n1.ok(append(append([]string{"task"}, args...), "--json")...), &r)
		return r
	}
	started := remote("start", "--node", "s0", "--launcher", "fake", "hello from n1")
	if started.Session == "" || started.Task.ID == "" || started.Node != "s0" {
		t.Fatalf("remote start: %+v", started)
	}
	// The owner's record names the operator: this test's user on n1.
	var rec taskResultJSON
	mustJSON(t, s0.ok("task", "show", started.Task.ID, "--json"), &rec)
	if want := operatorAt(t, "n1"); rec.Task.By != want {
		t.Fatalf("s0 records the start by %q, want %q", rec.Task.By, want)
	}
	if out := s0.ok("task", "show", started.Task.ID); !strings.Contains(out, "by: "+operatorAt(t, "n1")) {
		t.Fatalf("task show does not name the operator: %s", out)
	}
	eventually(t, stateTimeout, "the remote task succeeded on s0", func() (bool, string) {
		r := remote("show", started.Task.ID)
		return r.Task.State == "terminal" && r.Task.Status == "succeeded" &&
			strings.Contains(strings.Join(r.Output, "\n"), "echo: hello from n1"), r.Task.State + " " + r.Task.Status
	})

	// Steer from n1: s0's streaming agent gets it on its input, and the
	// answer says so. Its turn ends only once the steer has arrived.
	streaming := remote("start", "--node", "s0", "--launcher", "fakestream", "await-steer")
	st := remote("steer", "--node", "s0", "--session", streaming.Session, "steered from n1")
	if st.Node != "s0" || st.Steer == nil || st.Steer.Mode != "delivered" || st.Steer.Task != streaming.Task.ID {
		t.Fatalf("remote steer: %+v", st)
	}
	eventually(t, stateTimeout, "the steered task succeeded with the steer's answer", func() (bool, string) {
		r := remote("show", streaming.Task.ID)
		return r.Task.State == "terminal" && r.Task.Status == "succeeded" &&
			strings.Contains(strings.Join(r.Output, "\n"), "echo: steered from n1"), r.Task.State + " " + r.Task.Status
	})

	// Supersede a hung agent from n1: the replacement runs after the
	// barrier, and the old task ends superseded.
	first := remote("start", "--session", started.Session, "hang")
	eventually(t, stateTimeout, "the first hung task runs", func() (bool, string) {
		r := remote("show", first.Task.ID)
		return r.Task.State == "running", r.Task.State
	})
	next := remote("supersede", "--session", started.Session, "after the barrier")
	eventually(t, stateTimeout, "the replacement succeeded after the superseded task", func() (bool, string) {
		old, rep := remote("show", first.Task.ID), remote("show", next.Task.ID)
		return old.Task.Status == "superseded" && rep.Task.Status == "succeeded", old.Task.Status + " / " + rep.Task.Status
	})

	// A hung agent on s0, cancelled from n1.
	hung := remote("start", "--session", started.Session, "hang")
	if hung.Task.ID == "" {
		t.Fatalf("remote start on the session: %+v", hung)
	}
	eventually(t, stateTimeout, "the hung task runs", func() (bool, string) {
		r := remote("show", hung.Task.ID)
		return r.Task.State == "running", r.Task.State
	})
	remote("cancel", hung.Task.ID)
	eventually(t, stateTimeout, "the hung task is cancelled", func() (bool, string) {
		r := remote("show", hung.Task.ID)
		return r.Task.State == "terminal" && r.Task.Status == "cancelled", r.Task.State + " " + r.Task.Status
	})
	// The owner sees the same task.
	var own taskResultJSON
	mustJSON(t, s0.ok("task", "show", hung.Task.ID, "--json"), &own)
	if own.Task.Status != "cancelled" {
		t.Fatalf("s0's own view: %+v", own)
	}
}

// digestJSON is the handoff of `harn task digest ID --json`.
type digestJSON struct {
	Node   string `json:"node"`
	Digest struct {
		Digest *struct {
			Predecessor string `json:"predecessor"`
			Status      string `json:"status"`
			Calls       struct {
				Started   int `json:"started"`
				Succeeded int `json:"succeeded"`
				Aborted   int `json:"aborted"`
				Unknown   int `json:"outcome_unknown"`
			} `json:"calls"`
		} `json:"digest"`
	} `json:"digest"`
}

// From n1, a task on s0 starts a mutating call that hangs and ignores
// SIGINT, and n1 cancels it. The grace period passes first: the call ends
// outcome_unknown and the task cancelled, as both nodes see. There is no
// rollback: the successor may read, but its mutation is refused until
// `harn task ack` from n1 reaches the owner; then mutations run again.
func TestRemoteCancelOfAHungMutationIsUnknownAndMutationsWaitForAck(t *testing.T) {
	// s0's agents report their tool calls to s0 through `harn hook`.
	s0, n1 := remoteMesh(t, "n1", "fake", "HARN_TASK_GRACE=1s", "FAKEAGENT_HOOK="+harnBin+" hook claude-code",
		"HARN_REMOTE_PROFILES=read-only,full") // the mutations need full, which s0 lets n1 give
	target := filepath.Join(s0.root, "mutated")

	first := n1.task("start", "--node", "s0", "--launcher", "fake", "--profile", "full", "ignore-sigint mutate-hang="+target)
	if first.Node != "s0" || first.Task.ID == "" || first.Session == "" {
		t.Fatalf("remote start: %+v", first)
	}
	eventually(t, stateTimeout, "the mutation started on s0", func() (bool, string) {
		_, err := os.Stat(target)
		return err == nil, "no file yet"
	})
	// The successor waits behind the hung task, and so gets its digest.
	second := n1.task("follow-up", "--node", "s0", "--session", first.Session, "--profile", "full",
		"read="+target+" mutate="+target+"2")
	if second.Task.State != "queued" {
		t.Fatalf("the successor must wait for the hung task: %+v", second)
	}
	if c := n1.task("cancel", first.Task.ID); c.Node != "s0" || c.Task.State != "cancelling" || c.Task.Status != "cancelled" {
		t.Fatalf("the barrier must hold the cancelled task while its call is open: %+v", c)
	}
	n1.waitTask(first.Task.ID, "cancelled")
	done := n1.waitTask(second.Task.ID, "succeeded")

	// Both nodes see the unknown outcome: the cancelled task's mutation
	// holds the session's mutations, and the successor's digest counts it.
	for _, m := range []*meshNode{n1, s0} {
		v := m.task("show", first.Task.ID)
		if v.Node != "s0" || v.Task.Status != "cancelled" || v.View == nil || !slices.Equal(v.View.AwaitingAck, []string{first.Task.ID}) {
			t.Fatalf("%s: the cancelled task must await an ack: %+v (view %+v)", m.name, v, v.View)
		}
		var d digestJSON
		mustJSON(t, m.ok("task", "digest", second.Task.ID, "--json"), &d)
		g := d.Digest.Digest
		if d.Node != "s0" || g == nil || g.Predecessor != first.Task.ID || g.Status != "cancelled" ||
			g.Calls.Started != 1 || g.Calls.Unknown != 1 || g.Calls.Succeeded != 0 || g.Calls.Aborted != 0 {
			t.Fatalf("%s: the successor's digest must count one outcome_unknown call: %+v", m.name, g)
		}
	}
	// The successor read; its mutation was refused, naming the ack.
	out := strings.Join(done.Output, "\n")
	if !strings.Contains(out, "Read: read 8 bytes") {
		t.Fatalf("the read-only call after an unknown outcome must run: %q", done.Output)
	}
	if !strings.Contains(out, "denied Write") || !strings.Contains(out, "harn task ack "+first.Task.ID) {
		t.Fatalf("the mutation after an unknown outcome must be refused until the ack: %q", done.Output)
	}
	if _, err := os.Stat(target + "2"); err == nil {
		t.Fatal("the refused mutation ran")
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "mutated\n" {
		t.Fatalf("no rollback: the unknown call's write stays: %q, %v", b, err)
	}

	// The ack from n1 reaches the owner and releases the hold, once.
	if a := n1.task("ack", first.Task.ID); a.Node != "s0" {
		t.Fatalf("ack: %+v", a)
	}
	for _, m := range []*meshNode{n1, s0} {
		if v := m.task("show", first.Task.ID); v.View == nil || len(v.View.AwaitingAck) != 0 {
			t.Fatalf("%s: still awaiting an ack after it: %+v", m.name, v.View)
		}
	}
	if r := n1.harn("", "task", "ack", first.Task.ID); r.code != 15 {
		t.Fatalf("a second ack has nothing to acknowledge (exit 15): %v", r)
	}
	third := n1.task("start", "--node", "s0", "--session", first.Session, "--profile", "full", "mutate="+target+"3")
	n1.waitTask(third.Task.ID, "succeeded")
	if _, err := os.Stat(target + "3"); err != nil {
		t.Fatalf("after the ack the mutation must run: %v", err)
	}
}

// A Claude Code session on s0 asks for permission; the operator approves
// from n1, over the authenticated mesh, and s0's hook returns allow within
// a second of the approval.
func TestRemoteApprovalFromAnotherNode(t *testing.T) {
	s0, n1 := remoteMesh(t, "n1", "none")
	perm := `{"session_id":"cc-remote-ask","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"make deploy"}}`
	type hookOut struct {
		res result
		at  time.Time
	}
	ch := make(chan hookOut, 1)
	go func() {
		r := run(t, s0.hookEnv(), perm, "hook", "claude-code", "--remote-approve", "--approve-wait", "20s")
		ch <- hookOut{r, time.Now()}
	}()
	var reqs []struct {
		ID, Session, Node, Tool string
	}
	eventually(t, stateTimeout, "n1 lists s0's open request", func() (bool, string) {
		mustJSON(t, n1.ok("agents", "pending", "--json"), &reqs)
		return len(reqs) == 1 && reqs[0].Session == "cc-remote-ask", n1.ok("agents", "pending")
	})
	approved := time.Now()
	n1.ok("agents", "approve", reqs[0].ID)
	got := <-ch
	if d := got.at.Sub(approved); d > time.Second {
		t.Fatalf("s0's hook answered %v after n1's approval", d)
	}
	if !strings.Contains(got.res.stdout, `"behavior":"allow"`) {
		t.Fatalf("hook output: %v", got.res)
	}
}
