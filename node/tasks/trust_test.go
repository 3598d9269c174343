package tasks

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harn-dev/harn/runtime/agent/tools"
	"github.com/harn-dev/harn/runtime/subagent"
	"github.com/harn-dev/harn/util/clock"
	"github.com/harn-dev/harn/util/safefs"
)

// fakeTrust trusts the directories in trusted (their .harn read through
// safefs), says notice for the others, and refuses refuse.
type fakeTrust struct {
	t       *testing.T
	trusted map[string]bool
	notice  string
	refuse  string
}

func (f fakeTrust) Project(dir string) (ProjectFiles, string, error) {
	if dir == f.refuse {
		return nil, "", errors.New("it is the node's data dir")
	}
	if !f.trusted[dir] {
		return nil, f.notice, nil
	}
	d, err := safefs.Open(filepath.Join(dir, ".harn"))
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { d.Close() })
	return d, "", nil
}

func trustHost(t *testing.T, tr ProjectTrust) *Host {
	t.Helper()
	h, err := New(Config{Node: "n1", KV: &memKV{}, Key: bytes.Repeat([]byte{7}, 32), Clock: clock.Real{}, Trust: tr,
		Boxes: Toolboxes(tools.Config{NoMCPFiles: true, SkillDirs: []string{}})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

func agentProfile(t *testing.T, dir string) {
	t.Helper()
	p := filepath.Join(dir, ".harn", "agents", "docs.md")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("---\nname: docs\n---\nYou write docs."), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestAProjectsAgentProfilesLoadOnlyWhereTrusted: the profiles a child
// may take (the manager names them for an unknown one) are the built-ins
// alone in an untrusted directory (or with no trust at all), and include
// .harn/agents in a trusted one.
func TestAProjectsAgentProfilesLoadOnlyWhereTrusted(t *testing.T) {
	good, bad := t.TempDir(), t.TempDir()
	agentProfile(t, good)
	agentProfile(t, bad)
	offered := func(h *Host, dir string) string {
		_, err := h.subs.Spawn(subagent.Request{Parent: "h-p", Brief: "b", Profile: "no-such", Workdir: dir})
		if err == nil {
			t.Fatal("an unknown profile was taken")
		}
		return err.Error()
	}
	h := trustHost(t, fakeTrust{t: t, trusted: map[string]bool{good: true}})
	if got := offered(h, good); !strings.Contains(got, "docs") {
		t.Fatalf("a trusted project's profile is not offered: %s", got)
	}
	if got := offered(h, bad); strings.Contains(got, "docs") {
		t.Fatalf("an untrusted project's profile is offered: %s", got)
	}
	if got := offered(trustHost(t, nil), good); strings.Contains(got, "docs") {
		t.Fatalf("a profile is offered on a host without trust: %s", got)
	}
}

// TestAHarnStartSaysWhatOfItsProjectDidNotLoad: the start's message is
// the trust's notice; a directory the trust refuses is no session.
func TestAHarnStartSaysWhatOfItsProjectDidNotLoad(t *testing.T) {
	dir, data := t.TempDir(), t.TempDir()
	h := trustHost(t, fakeTrust{t: t, notice: "harn: not trusted; run `harn trust add " + dir + "`", refuse: data})
	opts := HarnOptions{Model: "gpt-4o", URL: "http://127.0.0.1:1/v1", Key: "k"}
	r, err := h.Do(Action{Op: OpStart, Agent: AgentHarn, Harn: &opts, Workdir: dir, Text: "hi"})
	if err != nil || r.Message != "harn: not trusted; run `harn trust add "+dir+"`" {
		t.Fatalf("%+v %v", r, err)
	}
	if _, err := h.Do(Action{Op: OpStart, Agent: AgentHarn, Harn: &opts, Workdir: data, Text: "hi"}); !errors.Is(err, ErrBadAction) {
		t.Fatalf("a start the trust refuses: %v", err)
	}
}
