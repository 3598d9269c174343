package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/cli/install"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/presence/adapter/codex"
)

func testDoctorEnv(t *testing.T) doctorEnv {
	home := t.TempDir()
	return doctorEnv{home: home, wd: t.TempDir(), getenv: func(string) string { return "" },
		lookPath: func(string) (string, error) { return "", os.ErrNotExist }, now: time.Now(),
		p: hook.Place{DataDir: t.TempDir(), Socket: filepath.Join(t.TempDir(), "none.sock")}}
}

func statusOf(cs []check, name string) (check, bool) {
	for _, c := range cs {
		if c.Check == name {
			return c, true
		}
	}
	return check{}, false
}

// TestDoctorHookChecks: hooks of an agent that is not set up are skipped;
// a config folder without harn's hooks, a partial install or a command
// whose binary is gone is a finding with its fix; a good install is ok.
func TestDoctorHookChecks(t *testing.T) {
	e := testDoctorEnv(t)
	exe := filepath.Join(t.TempDir(), "harn")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	opts := func(agent string) install.Options {
		return install.Options{Agent: agent, Scope: install.ScopeUser, Home: e.home, Command: exe, Getenv: e.getenv}
	}
	// claude-code: installed and fine. codex: installed, binary removed
	// later. cursor: folder only. gemini: not set up.
	for _, a := range []string{"claude-code", "codex"} {
		if _, err := install.Install(opts(a)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(e.home, ".cursor"), 0o755); err != nil {
		t.Fatal(err)
	}
	gone := opts("codex")
	gone.Command = filepath.Join(t.TempDir(), "old", "harn")
	if _, err := install.Install(gone); err != nil {
		t.Fatal(err)
	}
	cs := checkHooks(e)
	for name, want := range map[string]struct{ status, detail, fix string }{
		"hooks claude-code": {checkOK, "runs " + exe, ""},
		"hooks codex":       {checkFinding, "not an executable file", "harn hook install codex"},
		"hooks cursor":      {checkFinding, "not installed", "harn hook install cursor"},
		"hooks gemini":      {checkSkip, "not set up", ""},
	} {
		c, ok := statusOf(cs, name)
		if !ok || c.Status != want.status || !strings.Contains(c.Detail, want.detail) || !strings.Contains(c.Fix, want.fix) {
			t.Errorf("%s: %+v; want %+v", name, c, want)
		}
	}
	// A bare `harn` command is looked up on PATH.
	bare := opts("cursor")
	bare.Command = install.BareCommand
	if _, err := install.Install(bare); err != nil {
		t.Fatal(err)
	}
	if c, _ := statusOf(checkHooks(e), "hooks cursor"); c.Status != checkFinding || !strings.Contains(c.Detail, "not on PATH") {
		t.Errorf("bare harn not on PATH: %+v", c)
	}
	e.lookPath = func(string) (string, error) { return exe, nil }
	if c, _ := statusOf(checkHooks(e), "hooks cursor"); c.Status != checkOK {
		t.Errorf("bare harn on PATH: %+v", c)
	}
}

// TestDoctorCodexTrust: harn's Codex hooks without a trust record in
// config.toml are a finding that points at /hooks; with records they are
// ok; a disabled one is a finding.
func TestDoctorCodexTrust(t *testing.T) {
	e := testDoctorEnv(t)
	codexHome := filepath.Join(t.TempDir(), "codex-home")
	e.getenv = func(k string) string {
		if k == "CODEX_HOME" {
			return codexHome
		}
		return ""
	}
	o := install.Options{Agent: "codex", Scope: install.ScopeUser, Home: e.home, Command: "/usr/bin/harn", Getenv: e.getenv}
	r, err := install.Install(o)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := install.Inspect(o)
	c, _ := statusOf(checkHookTrust(e), "codex trust")
	if c.Status != checkFinding || !strings.Contains(c.Fix, "/hooks") {
		t.Fatalf("no trust records: %+v", c)
	}
	var cfg strings.Builder
	cfg.WriteString("model = \"o4\"\n[features]\nhooks = true\n")
	for i, h := range st.Hooks {
		if i%2 == 0 {
			fmt.Fprintf(&cfg, "\n[hooks.state.%q]\ntrusted_hash = \"sha256:abc\"\n", fmt.Sprintf("%s:%s:%d:%d", r.Path, codex.SnakeCase(h.Event), h.Group, h.Handler))
		}
	}
	cfg.WriteString("\n[hooks.state]\n")
	for i, h := range st.Hooks {
		if i%2 == 1 {
			fmt.Fprintf(&cfg, "'%s:%s:%d:%d' = { trusted_hash = \"sha256:def\" }\n", r.Path, codex.SnakeCase(h.Event), h.Group, h.Handler)
		}
	}
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, _ := statusOf(checkHookTrust(e), "codex trust"); c.Status != checkOK {
		t.Fatalf("all trusted: %+v\n%s", c, cfg.String())
	}
	h := st.Hooks[0]
	off := cfg.String() + fmt.Sprintf("\n[hooks.state.%q]\nenabled = false\n", fmt.Sprintf("%s:%s:%d:%d", r.Path, codex.SnakeCase(h.Event), h.Group, h.Handler))
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(off), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, _ := statusOf(checkHookTrust(e), "codex trust"); c.Status != checkFinding || !strings.Contains(c.Detail, "disabled") {
		t.Fatalf("disabled: %+v", c)
	}
}

// TestDoctorConfigFileMode: a config file holding a secret that group or
// others can read is a finding with chmod as its fix.
func TestDoctorConfigFileMode(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name, path string
		given      bool
		status     string
		detail     string
	}{
		{"secret, world-readable", write("a.json", `{"gossip-key":"x"}`, 0o644), true, checkFinding, "gossip-key"},
		{"secret, group-readable, key = value", write("b.conf", "gossip_key = x\n", 0o640), true, checkFinding, "mode 0640"},
		{"secret, private", write("c.json", `{"gossip-key":"x"}`, 0o600), true, checkOK, "mode 0600"},
		{"no secret, readable", write("d.json", `{"raft-port":"7811","gossip-key-file":"/k"}`, 0o644), true, checkOK, "mode 0644"},
		{"unparsable", write("e.conf", "just words\n", 0o600), true, checkFinding, "want key = value"},
		{"default path absent", filepath.Join(dir, "none.json"), false, checkOK, "no config file"},
		{"named but absent", filepath.Join(dir, "none.json"), true, checkFinding, "no such file"},
	} {
		e := doctorEnv{cfgPath: c.path, cfgGiven: c.given}
		got := checkConfigFile(e)
		if got.Status != c.status || !strings.Contains(got.Detail, c.detail) || (c.status == checkFinding && got.Fix == "") {
			t.Errorf("%s: %+v; want %s with %q", c.name, got, c.status, c.detail)
		}
		if c.status == checkFinding && strings.Contains(c.name, "secret") && got.Fix != "chmod 600 "+c.path {
			t.Errorf("%s: fix %q", c.name, got.Fix)
		}
	}
}

// TestDoctorGossipKeyForm: a malformed key is a finding; no key is one
// only when the node gossips with other machines.
func TestDoctorGossipKeyForm(t *testing.T) {
	good := "q1Kgzqz8m8x2RyF3mP9n0YvJ4oH7sT6wE5dC1bA2fGk="
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "k")
	if err := os.WriteFile(keyFile, []byte(good+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		e        doctorEnv
		findings int
		detail   string
	}{
		{"good key", doctorEnv{key: good}, 0, "32-byte"},
		{"not base64", doctorEnv{key: "harn keygen"}, 1, "--gossip-key"},
		{"too short", doctorEnv{key: "c2hvcnQ="}, 1, "--gossip-key"},
		{"none, lone node", doctorEnv{}, 0, "none"},
		{"none, mesh", doctorEnv{mesh: true}, 1, "not encrypted"},
		{"key file readable by others", doctorEnv{keyFile: keyFile}, 1, "mode 0644"},
		{"key file missing", doctorEnv{keyFile: filepath.Join(dir, "nope")}, 1, "no such file"},
	} {
		cs := checkGossipKey(c.e)
		n := 0
		var all []string
		for _, ch := range cs {
			all = append(all, ch.Detail)
			if ch.Status == checkFinding {
				n++
				if ch.Fix == "" {
					t.Errorf("%s: finding without a fix: %+v", c.name, ch)
				}
			}
		}
		if n != c.findings || !strings.Contains(strings.Join(all, "|"), c.detail) {
			t.Errorf("%s: %+v; want %d findings mentioning %q", c.name, cs, c.findings, c.detail)
		}
	}
}

// TestDoctorPortInUse: a port held by another process is a finding that
// names the flag; one held by the node is its own; a free one is ok.
func TestDoctorPortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freePort := free.Addr().(*net.TCPAddr).Port
	free.Close()
	e := doctorEnv{ports: []portSpec{{"raft", "raft-port", taken, false}, {"rpc", "rpc-port", freePort, false}}}
	cs := checkPorts(e, nil)
	raft, _ := statusOf(cs, fmt.Sprintf("port %d (raft)", taken))
	if raft.Status != checkFinding || !strings.Contains(raft.Fix, "--raft-port") || !strings.Contains(raft.Fix, "HARN_RAFT_PORT") {
		t.Errorf("taken port: %+v", raft)
	}
	if rpc, _ := statusOf(cs, fmt.Sprintf("port %d (rpc)", freePort)); rpc.Status != checkOK {
		t.Errorf("free port: %+v", rpc)
	}
	// This process holds the port: as the node's own it is fine.
	self := &api.StatusResponse{Pid: int32(os.Getpid())}
	if raft, _ := statusOf(checkPorts(e, self), fmt.Sprintf("port %d (raft)", taken)); raft.Status != checkOK {
		t.Errorf("the node's own port: %+v", raft)
	}
	if cs := checkPorts(doctorEnv{noMesh: true, ports: e.ports}, nil); len(cs) != 1 || cs[0].Status != checkSkip {
		t.Errorf("--no-mesh: %+v", cs)
	}
}

// TestDoctorRecentDiagnosticsAreAFinding: diagnostics of the last hour
// are one finding; older ones are history.
func TestDoctorRecentDiagnosticsAreAFinding(t *testing.T) {
	now := time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC)
	recent := wire.Diagnostic{Seq: 2, TS: now.Add(-10 * time.Minute).Format(time.RFC3339Nano), Source: "hook frob", Error: "unknown agent \"frob\""}
	old := wire.Diagnostic{Seq: 1, TS: now.Add(-2 * time.Hour).Format(time.RFC3339Nano), Source: "hook codex", Error: "payload is empty"}
	if c := checkDiagnostics(now, []wire.Diagnostic{recent, old}, nil); c.Status != checkFinding || !strings.Contains(c.Detail, "1 in the last hour") || !strings.Contains(c.Fix, "harn node errors") {
		t.Errorf("recent: %+v", c)
	}
	if c := checkDiagnostics(now, []wire.Diagnostic{old}, nil); c.Status != checkOK {
		t.Errorf("old: %+v", c)
	}
}

// TestDoctorNoNodeIsAFinding: with no node the report has a node finding
// and no diagnostics, and never starts a node.
func TestDoctorNoNodeIsAFinding(t *testing.T) {
	e := testDoctorEnv(t)
	rep := doctor(context.Background(), e)
	c, _ := statusOf(rep.Checks, "node")
	if c.Status != checkFinding || !strings.Contains(c.Fix, "harn node") || rep.Findings == 0 {
		t.Fatalf("%+v", rep)
	}
	if _, err := os.Stat(e.p.Socket); err == nil {
		t.Fatal("doctor started a node")
	}
}
