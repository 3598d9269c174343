package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
)

// startHarnOn starts a harn session on m (its own CLI, the provider key
// in its environment) running prompt in workdir, read-only, and returns
// the start's answer.
func startHarnOn(t *testing.T, m *meshNode, model *modeltest.Server, workdir, prompt string) taskResultJSON {
	t.Helper()
	r := run(t, append(m.hookEnv(), "HARN_PROVIDER_KEY=k"), "", "task", "start", "--agent", "harn", "--provider-url", model.URL(),
		"--model", "test-model", "--profile", "read-only", "--workdir", workdir, "--json", prompt)
	if r.code != 0 {
		t.Fatalf("harn session start on %s: %v", m.name, r)
	}
	var out taskResultJSON
	mustJSON(t, r.stdout, &out)
	return out
}

// harn attach from n1 to a session on s0 goes through the owner: the
// screen comes from s0's history, and Enter steers the running turn over
// the mesh (the next request to the model carries the steer). The
// keystroke-to-steer latency is set against the cluster's round trip
// (a routed task show) in the same run.
func TestAttachFromAnotherNodeSteersOverTheMesh(t *testing.T) {
	s0, n1 := remoteMesh(t, "n1", "")
	wd := workspaceOf(t, s0) // a session n1 may steer works in one of s0's workspaces
	f := filepath.Join(wd, "notes.txt")
	writeFileT(t, f, "pelican", 0o600)
	hold := make(chan struct{})
	first := modeltest.Calls(true, modeltest.Call{ID: "c1", Name: "read", Args: `{"path":"` + f + `"}`})
	first.Hold = hold
	m := modeltest.New(t, first, modeltest.Text("steered from afar"))
	st := startHarnOn(t, s0, m, wd, "read the notes")
	requestsAtLeast(t, m, 1)

	p := startChat(t, n1.root, "attach", t.TempDir(), n1.hookEnv(), "attach", st.Session[:12])
	p.waitScreen("attached through the owner", "session "+st.Session[:8])
	p.waitScreen("on its owner", " on s0")
	p.waitScreen("the owner's history is on screen", "❯ read the notes")
	start := time.Now()
	p.typeLine("steer over the mesh", "Enter")
	p.waitScreen("the steer is acknowledged", ": delivered now, or after its running tool calls")
	keyToAck := time.Since(start)
	rtt := time.Now()
	n1.task("show", "--node", "s0", st.Task.ID)
	t.Logf("keystroke to steer acknowledged on screen across nodes: %v; a routed task show n1->s0 (CLI start included): %v", keyToAck, time.Since(rtt))
	close(hold)
	reqs := requestsAtLeast(t, m, 2)
	if got := lastUser(reqs[1]); got != "steer over the mesh" {
		t.Fatalf("the request after the step boundary carries %q: %v", got, modeltest.Messages(reqs[1]))
	}
	p.waitScreen("the steered turn's answer reaches n1's screen", "steered from afar")
	if s := p.screen(); !strings.Contains(s, "↳ steer at step 2: steer over the mesh") {
		t.Fatalf("the steer is not on the screen:\n%s", s)
	}
}

// Under the owner's default policy (--remote-control off), harn attach
// from another node is refused (exit 16) before any screen, and the
// session is untouched.
func TestAttachIsRefusedWithoutTheOwnersRemoteControl(t *testing.T) {
	s0, n1 := trustedMesh(t)
	hold := make(chan struct{})
	defer close(hold)
	r := modeltest.Text("never seen")
	r.Hold = hold
	m := modeltest.New(t, r)
	st := startHarnOn(t, s0, m, t.TempDir(), "private work")
	// n1 finds the session's owner through the registry, which may lag
	// the start by a moment.
	eventually(t, meshTimeout, "an attach from n1 is refused by s0's policy", func() (bool, string) {
		r := n1.harn("", "attach", st.Session)
		return r.code == 16 && strings.Contains(r.stderr, "--remote-control off") && !strings.Contains(strings.TrimSpace(r.stderr), "\n"), r.String()
	})
	if len(m.Requests()) > 1 {
		t.Fatalf("the refused attach reached the model: %d requests", len(m.Requests()))
	}
}
