package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHookWithOpenStdinRecordsItsEvent: an agent that writes its payload
// and keeps stdin open does not stall the hook: the hook reads one JSON
// value, finishes well before its input wait, and the event is recorded,
// stamped with the repository and branch of its cwd.
func TestHookWithOpenStdinRecordsItsEvent(t *testing.T) {
	e := newEnv(t)
	e.startNode()
	repo := filepath.Join(e.root, "storefront")
	if err := os.MkdirAll(filepath.Join(repo, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, e.base, repo, "init", "-q")
	git(t, e.base, repo, "remote", "add", "origin", "git@example.com:acme/shop.git")
	git(t, e.base, repo, "checkout", "-q", "-b", "fix/rounding")
	cwd := filepath.Join(repo, "src")

	const sid = "open-stdin-4e21"
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, harnBin, "hook", "claude-code")
	cmd.Env = e.hookEnv()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := stdin.Write([]byte(claudeStart(sid, cwd) + "\n")); err != nil {
		t.Fatal(err)
	}
	// stdin stays open until the hook has exited.
	err = cmd.Wait()
	took := time.Since(start)
	stdin.Close()
	if err != nil {
		t.Fatalf("hook: %v\n%s", err, errb.String())
	}
	t.Logf("hook with open stdin finished in %v", took)
	if took >= 2*time.Second {
		t.Errorf("hook took %v with stdin open; it must not wait for EOF", took)
	}
	evs := e.trace(sid)
	if len(evs) != 1 || evs[0].Type != "session.start" {
		t.Fatalf("events: %+v", evs)
	}
	if evs[0].Attrs["repo"] != "shop" || evs[0].Attrs["branch"] != "fix/rounding" {
		t.Errorf("attrs %v; want repo shop, branch fix/rounding", evs[0].Attrs)
	}
	if ds := e.ok("node", "errors", "--json"); strings.TrimSpace(ds) != "[]" {
		t.Errorf("diagnostics: %s", ds)
	}
}

// TestDoctorShowsHookDiagnostics: `harn hook` with an unknown agent or an
// unknown flag exits 0, the flag's event still counts, and both become
// diagnostics that `harn node errors` and `harn doctor` show; doctor exits
// with its findings code and one line per check.
func TestDoctorShowsHookDiagnostics(t *testing.T) {
	e := newEnv(t)
	e.startNode()
	cwd := t.TempDir()
	e.hook("frobnicator", claudeStart("frob-1", cwd))
	e.hook("claude-code", claudeStart("newer-flag-1", cwd), "--from-a-newer-harn", "--timeout=2s")
	if evs := e.trace("newer-flag-1"); len(evs) != 1 {
		t.Fatalf("the event of a hook with an unknown flag was lost: %+v", evs)
	}
	errs := e.ok("node", "errors")
	for _, want := range []string{`unknown agent "frobnicator"`, "unknown flag --from-a-newer-harn"} {
		if !strings.Contains(errs, want) {
			t.Errorf("node errors lacks %q:\n%s", want, errs)
		}
	}
	if strings.Contains(errs, "--timeout") {
		t.Errorf("a known flag was reported:\n%s", errs)
	}

	home := filepath.Join(e.root, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(e.hookEnv(), "HOME="+home)
	if r := run(t, env, "", "hook", "install", "claude-code"); r.code != 0 {
		t.Fatalf("%v", r)
	}
	r := run(t, env, "", "doctor")
	if r.code != 10 {
		t.Fatalf("doctor with findings: want exit 10: %v", r)
	}
	for _, want := range []string{"ok      node:", "ok      hooks claude-code:", "FINDING hook diagnostics: 2 in the last hour",
		"; fix: see `harn node errors`", "recent hook diagnostics", "unknown flag --from-a-newer-harn"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, r.stdout)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if strings.HasPrefix(line, "FINDING") && !strings.Contains(line, "; fix: ") {
			t.Errorf("a finding without its fix: %q", line)
		}
	}
	var rep struct {
		Findings int `json:"findings"`
		Checks   []struct {
			Check, Status, Detail, Fix string
		} `json:"checks"`
		Diagnostics []struct {
			Source, Error string
		} `json:"diagnostics"`
	}
	rj := run(t, env, "", "doctor", "--json")
	if rj.code != 10 {
		t.Fatalf("doctor --json: %v", rj)
	}
	mustJSON(t, rj.stdout, &rep)
	if rep.Findings == 0 || len(rep.Diagnostics) != 2 || len(rep.Checks) == 0 {
		t.Fatalf("doctor --json: %+v", rep)
	}
}

// TestDoctorCleanExitsZero: a setup with a node and no findings exits 0.
func TestDoctorCleanExitsZero(t *testing.T) {
	e := newEnv(t)
	e.startNode()
	home := filepath.Join(e.root, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(e.hookEnv(), "HOME="+home)
	r := run(t, env, "", "doctor")
	if r.code != 0 || !strings.Contains(r.stdout, "all is well") {
		t.Fatalf("%v", r)
	}
}
