package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/cli/install"
)

// TestDoctorFlagsAHookTimeoutShorterThanItsWait: a PermissionRequest
// entry whose command waits 2m for a remote approval but whose timeout is
// 10 s is a finding that names the event, both durations and the install
// command that fixes it; after that install the check is ok.
func TestDoctorFlagsAHookTimeoutShorterThanItsWait(t *testing.T) {
	e := testDoctorEnv(t)
	exe := filepath.Join(t.TempDir(), "harn")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	o := install.Options{Agent: "claude-code", Scope: install.ScopeUser, Home: e.home, Command: exe,
		RemoteApprove: true, ApproveWait: 2 * time.Minute}
	if _, err := install.Install(o); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(e.home, ".claude", "settings.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// What an older harn wrote: the fixed 10 s on the waiting entry.
	short := strings.Replace(string(b), `"timeout": 135`, `"timeout": 10`, 1)
	if short == string(b) {
		t.Fatalf("no 135 s timeout in %s", b)
	}
	if err := os.WriteFile(path, []byte(short), 0o644); err != nil {
		t.Fatal(err)
	}
	var found []check
	for _, c := range checkHooks(e) {
		if c.Check == "hooks claude-code" && c.Status == checkFinding {
			found = append(found, c)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one finding for the short entry, got %+v", found)
	}
	c := found[0]
	for _, want := range []string{"timeout 10s", "wait 2m0s"} {
		if !strings.Contains(c.Detail, want) {
			t.Errorf("detail %q lacks %q", c.Detail, want)
		}
	}
	if !strings.Contains(c.Fix, "harn hook install claude-code --remote-approve --approve-wait 2m0s") || !strings.Contains(c.Fix, "2m15s") {
		t.Errorf("fix %q", c.Fix)
	}
	if _, err := install.Install(o); err != nil {
		t.Fatal(err)
	}
	for _, c := range checkHooks(e) {
		if c.Check == "hooks claude-code" && c.Status != checkOK {
			t.Errorf("after the reinstall: %+v", c)
		}
	}
}
