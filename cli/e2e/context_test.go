package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func wordsFile(t *testing.T, dir, name string, n int) string {
	t.Helper()
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %d of %s: the build passed and the index moved on\n", i, name)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

type contextJSON struct {
	Budget struct {
		Usable int `json:"usable_tokens"`
		Used   int `json:"used_tokens"`
	} `json:"budget"`
	Items []struct {
		State string `json:"state"`
		Ref   string `json:"ref"`
	} `json:"items"`
	Checkpoints []struct {
		Method string `json:"method"`
	} `json:"checkpoints"`
}

// A kill -9 of the node while its loop waits on a model call, then a
// restart: the provider view of the session is byte for byte the one
// before, and so is the report.
func TestContextProviderViewSurvivesKill9(t *testing.T) {
	e := newEnv(t)
	nodeEnv := append(append([]string(nil), e.base...), "HARN_TASK_GRACE=2s")
	n := e.spawn(nodeEnv, "node", "--data-dir", e.dataDir, "--socket", e.socket)
	e.waitReady(n)
	dir := t.TempDir()
	var answers []string
	for i := 0; i < 4; i++ {
		f := wordsFile(t, dir, fmt.Sprintf("f%d.txt", i), 5000)
		answers = append(answers, sseCall(fmt.Sprintf("c%d", i), "read", `{"path":"`+filepath.Base(f)+`"}`))
	}
	m := newModelServer(t, answers...)
	m.hold = make(chan struct{})
	t.Cleanup(func() { close(m.hold) })
	args := e.askArgs(m, "--grants", grantsFile(t, "execute read\n"), "--context-window", "8192", "--max-output", "512",
		"--compaction=false", "read the four files")
	_, _ = askJSONIn(t, e, dir, args)
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; len(m.requests()) < 5; i++ { // the fifth call waits: the loop is parked at a step
		if time.Now().After(deadline) || i > 6000 {
			t.Fatalf("the loop made %d model calls, want 5", len(m.requests()))
		}
		time.Sleep(10 * time.Millisecond)
	}
	sess := harnSession(t, e)
	before := e.ok("context", sess, "--provider-view", "--json")
	report := e.ok("context", sess, "--json")
	var r contextJSON
	mustJSON(t, report, &r)
	if r.Budget.Usable <= 0 || r.Budget.Usable >= 8192-512-1024 {
		t.Fatalf("the budget line does not come from --context-window and --max-output: %+v", r.Budget)
	}
	if len(r.Checkpoints) == 0 || r.Checkpoints[0].Method != "fallback" || r.Budget.Used > r.Budget.Usable {
		t.Fatalf("four 5 KB reads on an 8k window (the tools take about 1.6k of it): no fallback checkpoint or over budget: %s", report)
	}
	var view []map[string]any
	mustJSON(t, before, &view)
	if len(view) == 0 || !strings.Contains(before, "Context checkpoint") || !strings.Contains(before, "out-") {
		t.Fatalf("the provider view lacks the checkpoint and its references: %s", before)
	}
	if reqs := m.requests(); !strings.Contains(reqs[4], "Context checkpoint") {
		t.Fatalf("the request the loop sent does not carry the checkpoint: %.400s", reqs[4])
	}

	e.kill9(n)
	n2 := e.spawn(nodeEnv, "node", "--data-dir", e.dataDir, "--socket", e.socket)
	e.waitReady(n2)
	after := e.ok("context", sess, "--provider-view", "--json")
	if after != before {
		t.Fatalf("the provider view changed across a kill -9:\nbefore %s\nafter  %s", before, after)
	}
	if got := e.ok("context", sess, "--json"); got != report {
		t.Fatalf("the report changed across a kill -9:\nbefore %s\nafter  %s", report, got)
	}
	// a session that has no context is refused by name
	if r := run(t, e.hookEnv(), "", "context", "h-nosuch"); r.code == 0 || !strings.Contains(r.stderr, "no harn context") {
		t.Fatalf("context of an unknown session: %v", r)
	}
}

// harn ask --fork continues a session's context in a new session: its
// first request carries the earlier turn.
func TestAskForkContinuesTheContext(t *testing.T) {
	e := askEnv(t)
	m := newModelServer(t, sseText("the word is heron"), sseText("you asked about the word"))
	env := append(e.hookEnv(), "HARN_PROVIDER_KEY=k")
	if r := run(t, env, "", e.askArgs(m, "remember the word heron")...); r.code != 0 {
		t.Fatalf("%v", r)
	}
	sess := harnSession(t, e)
	r := run(t, env, "", e.askArgs(m, "--fork", sess, "what did I ask?")...)
	if r.code != 0 || strings.TrimSpace(r.stdout) != "you asked about the word" {
		t.Fatalf("%v", r)
	}
	reqs := m.requests()
	if len(reqs) != 2 || !strings.Contains(reqs[1], "remember the word heron") || !strings.Contains(reqs[1], "the word is heron") {
		t.Fatalf("the fork's request lacks the earlier turn: %v", reqs)
	}
	if r := run(t, env, "", e.askArgs(m, "--fork", "h-nosuch", "x")...); r.code == 0 {
		t.Fatalf("a fork of an unknown session ran: %v", r)
	}
	var raw json.RawMessage
	mustJSON(t, e.ok("context", sess, "--json"), &raw)
}
