package remotepolicy

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/harn-dev/harn/node/tasks/taskwire"
	"github.com/harn-dev/harn/runtime"
)

// fakeSessions is the node's sessions as the policy reads them.
type fakeSessions struct {
	workdirs map[string]string // loop sessions
	heads    map[string]string
	tasks    map[string]string // task -> session
	grants   map[string][]runtime.Grant
	held     map[string][]runtime.Grant // session -> the grants it holds
}

func (f fakeSessions) SessionGrants(h string) ([]runtime.Grant, bool) {
	g, ok := f.held[h]
	return g, ok
}

func (f fakeSessions) Workdir(h string) (string, bool) { d, ok := f.workdirs[h]; return d, ok }
func (f fakeSessions) Head(h string) string            { return f.heads[h] }
func (f fakeSessions) SessionOf(t string) (string, bool) {
	s, ok := f.tasks[t]
	return s, ok
}
func (f fakeSessions) Grants(t string) ([]runtime.Grant, error) {
	g, ok := f.grants[t]
	if !ok {
		return nil, runtime.ErrNoTask
	}
	return g, nil
}

// setup is a node with a data dir, one workspace root beside it, and a
// directory outside both.
type setup struct {
	cfg                 Config
	data, root, outside string
}

func newSetup(t *testing.T) setup {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := setup{data: filepath.Join(base, "data"), root: filepath.Join(base, "work"), outside: filepath.Join(base, "elsewhere")}
	for _, d := range []string{s.data, s.root, s.outside, filepath.Join(s.root, "proj")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := ResolveWorkspaces([]string{s.root})
	if err != nil {
		t.Fatal(err)
	}
	s.cfg = DefaultConfig()
	s.cfg.Node, s.cfg.Workspaces, s.cfg.Private = "s0", ws, []string{s.data}
	s.cfg.ProviderURL = "http://127.0.0.1:9/v1"
	return s
}

func refusedWith(t *testing.T, err error, says string) {
	t.Helper()
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), says) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("want a one-line refusal saying %q, got %v", says, err)
	}
}

func harnStart(workdir string, o taskwire.HarnOptions, g []runtime.Grant) *taskwire.Action {
	return &taskwire.Action{Op: taskwire.OpStart, Agent: taskwire.AgentHarn, Workdir: workdir, Harn: &o, Grants: g, Text: "x"}
}

// TestProviderURLFromAnotherNodeIsRefused: a caller never names the URL a
// session of this node talks to (nor its API, nor a command to run).
func TestProviderURLFromAnotherNodeIsRefused(t *testing.T) {
	s := newSetup(t)
	refusedWith(t, s.cfg.Admit(fakeSessions{}, harnStart("", taskwire.HarnOptions{URL: "http://evil.example/v1", Model: "m"}, nil)), "drop --provider-url")
	refusedWith(t, s.cfg.Admit(fakeSessions{}, harnStart("", taskwire.HarnOptions{Provider: "anthropic", Model: "m"}, nil)), "drop --provider")
	refusedWith(t, s.cfg.Admit(fakeSessions{}, harnStart("", taskwire.HarnOptions{Model: "m", MCP: []string{"x=sh"}}, nil)), "never runs a command it sends")
}

// TestRemoteHarnSessionTakesTheNodesProvider: an admitted start runs with
// this node's API and URL, with no key of the caller's, in the first
// workspace when it names none.
func TestRemoteHarnSessionTakesTheNodesProvider(t *testing.T) {
	s := newSetup(t)
	a := harnStart("", taskwire.HarnOptions{Model: "m", Key: "sk-caller"}, nil)
	if err := s.cfg.Admit(fakeSessions{}, a); err != nil {
		t.Fatal(err)
	}
	if a.Harn.Provider != "openai" || a.Harn.URL != s.cfg.ProviderURL || a.Harn.Key != "" || a.Workdir != s.root {
		t.Fatalf("admitted start: %+v in %s", *a.Harn, a.Workdir)
	}
}

// TestRemoteModelOutsideTheModelListIsRefused: --provider-models names
// what a remote session may use; the first is its default.
func TestRemoteModelOutsideTheModelListIsRefused(t *testing.T) {
	s := newSetup(t)
	s.cfg.Models = []string{"small", "large"}
	refusedWith(t, s.cfg.Admit(fakeSessions{}, harnStart("", taskwire.HarnOptions{Model: "priciest"}, nil)), "--provider-models (small,large)")
	a := harnStart("", taskwire.HarnOptions{}, nil)
	if err := s.cfg.Admit(fakeSessions{}, a); err != nil || a.Harn.Model != "small" {
		t.Fatalf("the default model: %v %q", err, a.Harn.Model)
	}
}

// TestRemoteWorkdirOutsideTheWorkspacesIsRefused: the data dir, a
// directory outside every root, a root that holds the data dir, and a
// relative path are refused; a directory in a root is taken.
func TestRemoteWorkdirOutsideTheWorkspacesIsRefused(t *testing.T) {
	s := newSetup(t)
	for _, dir := range []string{s.data, s.outside, filepath.Join(s.data, "tls"), "/", filepath.Join(s.root, "..", "data")} {
		refusedWith(t, s.cfg.Admit(fakeSessions{}, harnStart(dir, taskwire.HarnOptions{Model: "m"}, nil)), "workdir")
	}
	launcher := &taskwire.Action{Op: taskwire.OpStart, Launcher: "claude", Workdir: s.data, Text: "x"}
	refusedWith(t, s.cfg.Admit(fakeSessions{}, launcher), "outside its workspaces")
	if err := s.cfg.Admit(fakeSessions{}, harnStart("proj", taskwire.HarnOptions{Model: "m"}, nil)); !errors.Is(err, taskwire.ErrBadAction) {
		t.Fatalf("a relative workdir: %v", err)
	}
	in := harnStart(filepath.Join(s.root, "proj"), taskwire.HarnOptions{Model: "m"}, nil)
	if err := s.cfg.Admit(fakeSessions{}, in); err != nil || in.Workdir != filepath.Join(s.root, "proj") {
		t.Fatalf("a directory in the root: %v (%s)", err, in.Workdir)
	}
	// A root that holds the data dir: the root itself is refused, a
	// directory beside the data dir is taken.
	s.cfg.Workspaces = []string{filepath.Dir(s.data)}
	refusedWith(t, s.cfg.Admit(fakeSessions{}, harnStart(filepath.Dir(s.data), taskwire.HarnOptions{Model: "m"}, nil)), "holds its data dir")
	if err := s.cfg.Admit(fakeSessions{}, harnStart(s.outside, taskwire.HarnOptions{Model: "m"}, nil)); err != nil {
		t.Fatalf("beside the data dir: %v", err)
	}
	if h := s.cfg.Holding(); len(h) != 1 {
		t.Fatalf("Holding: %v", h)
	}
}

// TestRemoteWorkdirThroughASymlinkIsResolvedBeforeTheCheck: a link in a
// root that points at the data dir is the data dir.
func TestRemoteWorkdirThroughASymlinkIsResolvedBeforeTheCheck(t *testing.T) {
	s := newSetup(t)
	link := filepath.Join(s.root, "innocent")
	if err := os.Symlink(s.data, link); err != nil {
		t.Fatal(err)
	}
	refusedWith(t, s.cfg.Admit(fakeSessions{}, harnStart(link, taskwire.HarnOptions{Model: "m"}, nil)), "outside its workspaces")
	// A root given through a link is resolved too.
	via := filepath.Join(s.outside, "root-link")
	if err := os.Symlink(s.root, via); err != nil {
		t.Fatal(err)
	}
	ws, err := ResolveWorkspaces([]string{via})
	if err != nil || len(ws) != 1 || ws[0] != s.root {
		t.Fatalf("ResolveWorkspaces(%s) = %v, %v", via, ws, err)
	}
}

// TestNoWorkspaceMeansNoRemoteSession: the default is closed.
func TestNoWorkspaceMeansNoRemoteSession(t *testing.T) {
	s := newSetup(t)
	s.cfg.Workspaces = nil
	refusedWith(t, s.cfg.Admit(fakeSessions{}, harnStart("", taskwire.HarnOptions{Model: "m"}, nil)), "--workspace DIR")
	f := fakeSessions{workdirs: map[string]string{"h-1": s.root}}
	refusedWith(t, s.cfg.Admit(f, &taskwire.Action{Op: taskwire.OpFollowUp, Session: "h-1", Text: "x"}), "--workspace DIR")
}

// TestRemoteGrantsBeyondTheRemoteProfilesAreRefused: start, follow-up
// and supersede carry grants; each must be within --remote-profiles.
func TestRemoteGrantsBeyondTheRemoteProfilesAreRefused(t *testing.T) {
	s := newSetup(t)
	full, _ := runtime.Profile("full")
	edit, _ := runtime.Profile("edit")
	ro, _ := runtime.Profile("read-only")
	f := fakeSessions{workdirs: map[string]string{"h-1": s.root}}
	refusedWith(t, s.cfg.Admit(f, harnStart("", taskwire.HarnOptions{Model: "m"}, full)), `grant "execute *" is beyond its --remote-profiles (read-only)`)
	for _, op := range []string{taskwire.OpFollowUp, taskwire.OpSupersede, taskwire.OpStart} {
		refusedWith(t, s.cfg.Admit(f, &taskwire.Action{Op: op, Session: "h-1", Grants: edit, Text: "x"}), "--remote-profiles (read-only)")
		shell := []runtime.Grant{{Level: runtime.Execute, Capability: "shell", Match: "git *"}}
		refusedWith(t, s.cfg.Admit(f, &taskwire.Action{Op: op, Session: "h-1", Grants: shell, Text: "x"}), "execute shell(git *)")
		if err := s.cfg.Admit(f, &taskwire.Action{Op: op, Session: "h-1", Grants: ro, Text: "x"}); err != nil {
			t.Fatalf("%s with read-only: %v", op, err)
		}
	}
	s.cfg.Profiles = []string{"read-only", "full"}
	if err := s.cfg.Admit(f, harnStart("", taskwire.HarnOptions{Model: "m"}, full)); err != nil {
		t.Fatalf("full where --remote-profiles names it: %v", err)
	}
	s.cfg.Profiles = nil
	refusedWith(t, s.cfg.Admit(f, harnStart("", taskwire.HarnOptions{Model: "m"}, ro)), "--remote-profiles none")
}

// TestRemoteGrantsDefaultWithinTheProfiles: no grants is read-only when
// the profiles take it in (every profile holds read-only's grants), named
// in the action so that the target's own default (a harn session's
// confirm) never applies to a caller from another node.
func TestRemoteGrantsDefaultWithinTheProfiles(t *testing.T) {
	s := newSetup(t)
	ro, _ := runtime.Profile("read-only")
	for _, profiles := range [][]string{{"read-only"}, {"edit"}, {"confirm"}, {"full"}} {
		s.cfg.Profiles = profiles
		a := harnStart("", taskwire.HarnOptions{Model: "m"}, nil)
		if err := s.cfg.Admit(fakeSessions{}, a); err != nil || !slices.Equal(a.Grants, ro) {
			t.Fatalf("--remote-profiles %v: the default is %v %v", profiles, err, a.Grants)
		}
	}
}

// TestASessionsGrantsHoldForARemoteFollowUp: a later task of a session,
// sent from another node with no grants named (ask --session, follow-up,
// supersede), holds what the session holds when the remote profiles cover
// it; a session holding more is refused, never narrowed or widened
// silently; grants the caller names are checked as before.
func TestASessionsGrantsHoldForARemoteFollowUp(t *testing.T) {
	s := newSetup(t)
	confirm, _ := runtime.Profile("confirm")
	full, _ := runtime.Profile("full")
	ro, _ := runtime.Profile("read-only")
	f := fakeSessions{workdirs: map[string]string{"h-c": s.root, "h-f": s.root},
		held: map[string][]runtime.Grant{"h-c": confirm, "h-f": full}}
	s.cfg.Profiles = []string{"read-only", "confirm"}
	for _, op := range []string{taskwire.OpFollowUp, taskwire.OpSupersede, taskwire.OpStart} {
		a := &taskwire.Action{Op: op, Session: "h-c", Text: "x"}
		if err := s.cfg.Admit(f, a); err != nil || !slices.Equal(a.Grants, confirm) {
			t.Fatalf("%s of a confirm session: %v %v, want the session's grants", op, err, a.Grants)
		}
		refusedWith(t, s.cfg.Admit(f, &taskwire.Action{Op: op, Session: "h-f", Text: "x"}), "session h-f holds")
		a = &taskwire.Action{Op: op, Session: "h-f", Text: "x", Grants: ro}
		if err := s.cfg.Admit(f, a); err != nil || !slices.Equal(a.Grants, ro) {
			t.Fatalf("%s naming read-only: %v %v", op, err, a.Grants)
		}
	}
}

// TestRemoteSteerOfATaskBeyondTheProfilesIsRefused: a steer reaches the
// running turn, or follows up with the grants of the turn it names; a
// replace keeps its task's grants. Both must be within the profiles.
func TestRemoteSteerOfATaskBeyondTheProfilesIsRefused(t *testing.T) {
	s := newSetup(t)
	full, _ := runtime.Profile("full")
	ro, _ := runtime.Profile("read-only")
	f := fakeSessions{workdirs: map[string]string{"h-1": s.root}, heads: map[string]string{"h-1": "t-full"},
		tasks: map[string]string{"t-full": "h-1", "t-ro": "h-1"}, grants: map[string][]runtime.Grant{"t-full": full, "t-ro": ro}}
	refusedWith(t, s.cfg.Admit(f, &taskwire.Action{Op: taskwire.OpSteer, Session: "h-1", Text: "run env"}), "another node may not steer it")
	refusedWith(t, s.cfg.Admit(f, &taskwire.Action{Op: taskwire.OpReplace, Task: "t-full", Text: "run env"}), "another node may not replace it")
	f.heads = map[string]string{}
	refusedWith(t, s.cfg.Admit(f, &taskwire.Action{Op: taskwire.OpSteer, Session: "h-1", Task: "t-full", Text: "run env"}), "t-full")
	if err := s.cfg.Admit(f, &taskwire.Action{Op: taskwire.OpSteer, Session: "h-1", Task: "t-ro", Text: "x"}); err != nil {
		t.Fatalf("a steer of a read-only turn: %v", err)
	}
	// A session working outside the roots takes no steer either.
	f.workdirs["h-1"] = s.data
	refusedWith(t, s.cfg.Admit(f, &taskwire.Action{Op: taskwire.OpSteer, Session: "h-1", Task: "t-ro", Text: "x"}), "workdir")
}

// TestCoversErrsOnTheSideOfRefusing: pattern against pattern.
func TestCoversErrsOnTheSideOfRefusing(t *testing.T) {
	g := func(l runtime.Level, c, m string, confirm bool) runtime.Grant {
		return runtime.Grant{Level: l, Capability: c, Match: m, Confirm: confirm}
	}
	x := runtime.Execute
	for _, tc := range []struct {
		p, g runtime.Grant
		want bool
	}{
		{g(x, "*", "", false), g(x, "shell", "", false), true},
		{g(x, "read_*", "", false), g(x, "read_file", "", false), true},
		{g(x, "read_*", "", false), g(x, "read_x*", "", false), true},
		{g(x, "read_*", "", false), g(x, "re*", "", false), false},
		{g(x, "read_*", "", false), g(x, "*", "", false), false},
		{g(runtime.Load, "*", "", false), g(x, "read", "", false), false},
		{g(x, "shell", "git *", false), g(x, "shell", "", false), false},
		{g(x, "shell", "git *", false), g(x, "shell", "git *", false), true},
		{g(x, "shell", "", true), g(x, "shell", "", false), false},
		{g(x, "shell", "", false), g(x, "shell", "", true), true},
	} {
		if got := Covers(tc.p, tc.g); got != tc.want {
			t.Errorf("Covers(%+v, %+v) = %v", tc.p, tc.g, got)
		}
	}
}

func TestParseProfiles(t *testing.T) {
	for in, want := range map[string]string{"": "read-only", "none": "", "read-only,full,full": "read-only,full", " edit ": "edit"} {
		got, err := ParseProfiles(in)
		if err != nil || strings.Join(got, ",") != want {
			t.Errorf("ParseProfiles(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseProfiles("root"); !errors.Is(err, ErrBadPolicy) {
		t.Fatal(err)
	}
}

// BenchmarkAdmitARemoteHarnStart: what the policy adds to a routed start
// (a symlink walk of the workdir, the provider, the grants).
func BenchmarkAdmitARemoteHarnStart(b *testing.B) {
	base, _ := filepath.EvalSymlinks(b.TempDir())
	root := filepath.Join(base, "work")
	if err := os.MkdirAll(filepath.Join(root, "a", "b"), 0o700); err != nil {
		b.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Node, cfg.Workspaces, cfg.Private = "s0", []string{root}, []string{filepath.Join(base, "data")}
	ro, _ := runtime.Profile("read-only")
	for b.Loop() {
		a := harnStart(filepath.Join(root, "a", "b"), taskwire.HarnOptions{Model: "m"}, ro)
		if err := cfg.Admit(fakeSessions{}, a); err != nil {
			b.Fatal(err)
		}
	}
}
