package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/util/safefs"
)

// fixture is a runtime with one session whose task runs through a Toolbox.
type fixture struct {
	t    *testing.T
	rt   *runtime.Runtime
	box  *Toolbox
	dir  string
	task string
	n    int
}

type fixOpts struct {
	cfg    Config
	grants []runtime.Grant
	budget runtime.Budget
	prompt string
	files  bool // read the user's and the project's mcp.json
}

func newFixture(t *testing.T, o fixOpts) *fixture {
	t.Helper()
	rt, err := runtime.New(runtime.Config{Ledger: runtime.NewMemLedger(), Key: []byte("test-key-0123456789")})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := o.cfg
	cfg.Runtime = rt
	if cfg.Project == "" {
		cfg.Project = dir
	}
	if cfg.SkillDirs == nil {
		cfg.SkillDirs = []string{filepath.Join(cfg.Project, ".harn", "skills")}
	}
	cfg.NoMCPFiles = !o.files
	if o.files && cfg.ProjectFiles == nil {
		cfg.ProjectFiles = trustedFiles(t, cfg.Project)
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := b.Open(ctx); err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	f := &fixture{t: t, rt: rt, box: b, dir: cfg.Project}
	f.start(o)
	return f
}

func (f *fixture) start(o fixOpts) {
	f.t.Helper()
	f.n++
	sid := "s" + string(rune('0'+f.n))
	if err := f.rt.OpenSession(sid, runtime.SessionConfig{Catalog: f.box.Catalog(), Workdir: f.dir, Budget: o.budget}); err != nil {
		f.t.Fatal(err)
	}
	text := o.prompt
	if text == "" {
		text = "do the thing"
	}
	grants := o.grants
	if grants == nil {
		grants = []runtime.Grant{{Level: runtime.Execute, Capability: "*"}}
	}
	if _, err := f.rt.Start(sid, runtime.Request{Text: text, Grants: grants}); err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	run, err := f.rt.Next(ctx, sid)
	if err != nil {
		f.t.Fatal(err)
	}
	f.task = run.Task
}

func (f *fixture) spec(name string) (Spec, bool) {
	for _, s := range f.box.Specs("", f.task) {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

// call makes one call as harn's loop does: the spec's hash, the pre-call
// check (runtime.Begin), Run, End.
func (f *fixture) call(name string, args any) (Result, error) {
	f.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		f.t.Fatal(err)
	}
	hash := ""
	if s, ok := f.spec(name); ok {
		hash = s.Hash
	}
	c, err := f.rt.Begin(f.task, runtime.CallRequest{Capability: name, Input: raw, ContractHash: hash})
	if err != nil {
		return Result{}, err
	}
	res, err := f.box.Run(context.Background(), Call{ID: c.ID, Name: name, Args: raw, Task: f.task, Dir: f.dir})
	o := runtime.OutcomeSucceeded
	if err != nil {
		o = runtime.OutcomeFailed
	}
	_ = c.End(o, []byte(res.Content))
	return res, err
}

func (f *fixture) mustCall(name string, args any) string {
	f.t.Helper()
	res, err := f.call(name, args)
	if err != nil {
		f.t.Fatalf("%s: %v (%s)", name, err, res.Content)
	}
	return res.Content
}

func writeFileT(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// trustedFiles are a project's .harn files as a trusted project's box
// reads them (the node hands it its trust check's snapshot).
func trustedFiles(t *testing.T, project string) Files {
	t.Helper()
	dir := filepath.Join(project, ".harn")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := safefs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}
