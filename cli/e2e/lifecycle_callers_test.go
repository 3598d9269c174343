package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAnExecSessionsAgentDeclaringLifecycleIsRefused: an agent that a
// harn task runtime started (--exec) runs `harn agents lifecycle blocked`
// for its own harn session; the node sees the caller below its own
// process and refuses it with exit 4 naming top_level_only, recording
// nothing. The operator's shell on the node declares for it.
func TestAnExecSessionsAgentDeclaringLifecycleIsRefused(t *testing.T) {
	e, _ := taskEnv(t)
	script := filepath.Join(e.root, "declare.sh")
	body := "#!/bin/sh\n" + harnBin + " --socket " + e.socket + " agents lifecycle blocked --reason 'waiting on review' 2>&1\necho \"rc=$?\"\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	r := e.task("start", "--exec", script, "declare")
	done := e.waitTask(r.Task.ID, "succeeded")
	out := strings.Join(done.Output, "\n")
	if !strings.Contains(out, "rc=4") || !strings.Contains(out, "top_level_only") {
		t.Fatalf("the exec'd agent's declaration: %q; want exit 4 naming top_level_only", out)
	}
	var st struct {
		TaskState string `json:"task_state"`
	}
	mustJSON(t, e.ok("agents", "status", r.Session, "--json"), &st)
	if st.TaskState == "blocked" {
		t.Fatal("a refused declaration changed the session's lifecycle")
	}
	// The operator on the owning node, in no agent's process tree.
	e.ok("agents", "lifecycle", "blocked", "--reason", "waiting on review", "--session", r.Session)
	mustJSON(t, e.ok("agents", "status", r.Session, "--json"), &st)
	if st.TaskState != "blocked" {
		t.Fatalf("the operator's declaration: task_state %q", st.TaskState)
	}
}

// TestLifecycleOnlyFromOwnSession: a lifecycle declaration is accepted
// only from the target session's own process tree or from an operator on
// the owning node. Two agent stand-ins (real processes, not shells) each
// own a session through their hooks; the second runs `harn agents
// lifecycle blocked` as its child for the first one's session and is
// refused with exit 4 naming own_session, recording nothing; for its own
// session the same command is accepted. The test process, inside no
// agent's tree, is the operator: its declaration for the first session
// is accepted.
func TestLifecycleOnlyFromOwnSession(t *testing.T) {
	e := newEnv(t)
	e.startNode()
	cwd := t.TempDir()
	victim, mine := "victim-41c2-4a0e", "mine-7d3b-49f1"
	declare := func(sid string) []string {
		return []string{"agents", "lifecycle", "blocked", "--reason", "waiting on review", "--session", sid}
	}

	vpid, _ := startAgentHelper(t, e, []string{claudeStart(victim, cwd), claudePrompt(victim, cwd)}, nil)
	mpid, res := startAgentHelper(t, e, []string{claudeStart(mine, cwd), claudePrompt(mine, cwd)},
		[][]string{declare(victim), declare(mine)})
	if st := e.show(victim); st.AgentPID != vpid {
		t.Fatalf("%s's agent pid is %d, want its helper %d", victim, st.AgentPID, vpid)
	}
	if st := e.show(mine); st.AgentPID != mpid {
		t.Fatalf("%s's agent pid is %d, want its helper %d", mine, st.AgentPID, mpid)
	}
	if len(res) != 2 {
		t.Fatalf("the helper ran %d commands, want 2", len(res))
	}
	other := res[0]
	if other.Code != 4 || !strings.Contains(other.Stderr, "own_session") ||
		!strings.Contains(other.Stderr, "a session may declare only its own lifecycle") {
		t.Fatalf("a declaration for another session's lifecycle: exit %d stderr %q; want exit 4 naming own_session", other.Code, other.Stderr)
	}
	if strings.Count(strings.TrimSpace(other.Stderr), "\n") != 0 {
		t.Fatalf("the refusal is not one line: %q", other.Stderr)
	}
	if st := e.status(victim); st.TaskState == "blocked" {
		t.Fatal("a refused declaration changed the other session's lifecycle")
	}
	if own := res[1]; own.Code != 0 {
		t.Fatalf("a declaration for its own session: exit %d stderr %q", own.Code, own.Stderr)
	}
	if st := e.status(mine); st.TaskState != "blocked" {
		t.Fatalf("its own declaration: task_state %q, want blocked", st.TaskState)
	}
	// The operator on the owning node.
	e.ok(declare(victim)...)
	if st := e.status(victim); st.TaskState != "blocked" {
		t.Fatalf("the operator's declaration: task_state %q, want blocked", st.TaskState)
	}
}

// Helper mode helperAgentRuns: the agent stand-in of runHelper that also
// runs harn commands as its children after its hooks.
const (
	helperAgentRuns = "agent-runs"
	helperRunEnv    = "HARN_E2E_RUN" // JSON [][]string: harn argv lists
)

// helperResult is one command an agent helper ran.
type helperResult struct {
	Args   []string `json:"args"`
	Code   int      `json:"code"`
	Stdout string   `json:"stdout"`
	Stderr string   `json:"stderr"`
}

// runAgentHelper runs `harn hook claude-code` once per line of
// helperPayloadEnv, then each harn command of helperRunEnv, printing one
// JSON helperResult line per command, then "ready"; then it sleeps until
// it is killed (at most a minute), so that its sessions stay live.
func runAgentHelper() int {
	var environ []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HARN_E2E_") {
			environ = append(environ, kv)
		}
	}
	bin := os.Getenv(helperBinEnv)
	harn := func(stdin string, args ...string) (helperResult, error) {
		ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = environ
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		r := helperResult{Args: args, Stdout: out.String(), Stderr: errb.String()}
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.Exited() {
			r.Code, err = ee.ExitCode(), nil
		}
		return r, err
	}
	for _, payload := range strings.Split(os.Getenv(helperPayloadEnv), "\n") {
		if r, err := harn(payload, "hook", "claude-code"); err != nil || r.Code != 0 {
			fmt.Fprintln(os.Stderr, "e2e helper: hook:", err, r.Code, r.Stderr)
			return 1
		}
	}
	var runs [][]string
	if v := os.Getenv(helperRunEnv); v != "" {
		if err := json.Unmarshal([]byte(v), &runs); err != nil {
			fmt.Fprintln(os.Stderr, "e2e helper:", helperRunEnv+":", err)
			return 2
		}
	}
	enc := json.NewEncoder(os.Stdout)
	for _, args := range runs {
		r, err := harn("", args...)
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e helper: harn:", err)
			return 1
		}
		if err := enc.Encode(r); err != nil {
			return 1
		}
	}
	fmt.Println("ready")
	time.Sleep(time.Minute)
	return 0
}

// startAgentHelper starts the test binary as an agent stand-in
// (helperAgentRuns) that runs payloads as its hooks and then runs as its
// children; it returns once the helper is ready, with its pid and what
// its commands gave. The helper is killed at cleanup.
func startAgentHelper(t *testing.T, e *env, payloads []string, runs [][]string) (int, []helperResult) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rj, err := json.Marshal(runs)
	if err != nil {
		t.Fatal(err)
	}
	helper := exec.Command(self)
	helper.Env = append(e.hookEnv(), helperEnv+"="+helperAgentRuns, helperBinEnv+"="+harnBin,
		helperPayloadEnv+"="+strings.Join(payloads, "\n"), helperRunEnv+"="+string(rj))
	helper.Stderr = os.Stderr
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = helper.Wait(); close(done) }()
	t.Cleanup(func() { _ = helper.Process.Kill(); <-done })
	type report struct {
		res []helperResult
		err error
	}
	got := make(chan report, 1)
	go func() {
		var rep report
		rd := bufio.NewReader(out)
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				rep.err = fmt.Errorf("helper stopped before ready: %w", err)
				break
			}
			if strings.TrimSpace(line) == "ready" {
				break
			}
			var r helperResult
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				rep.err = fmt.Errorf("helper line %q: %w", line, err)
				break
			}
			rep.res = append(rep.res, r)
		}
		got <- rep
	}()
	select {
	case rep := <-got:
		if rep.err != nil {
			t.Fatal(rep.err)
		}
		return helper.Process.Pid, rep.res
	case <-time.After(cmdTimeout * time.Duration(1+len(payloads)+len(runs))):
		t.Fatal("helper did not report ready")
	}
	return 0, nil
}
