package runtime

import (
	"context"
	"errors"
	"github.com/harn-dev/harn/util/clock"
	"time"
)

const (
	testSession = "s1"
	testGrace   = 5 * time.Second
)

// testCatalog: core read and write tools, a loadable shell, a loadable
// search, a big tool, two skills, and a tool without a provider.
func testCatalog() []Capability {
	return []Capability{
		{Name: "read_file", Kind: KindTool, ContractHash: "h-read", Provider: "fs", ReadOnly: true, Tokens: 100, Core: true, Subject: SubjectPath},
		{Name: "write_file", Kind: KindTool, ContractHash: "h-write", Provider: "fs", Tokens: 100, Core: true, Subject: SubjectPath},
		{Name: "shell", Kind: KindTool, ContractHash: "h-shell", Provider: "exec", Tokens: 200, Subject: SubjectCommand},
		{Name: "search", Kind: KindTool, ContractHash: "h-search", Provider: "web", ReadOnly: true, Tokens: 300},
		{Name: "big", Kind: KindTool, ContractHash: "h-big", Provider: "fs", ReadOnly: true, Tokens: 7000},
		{Name: "review", Kind: KindSkill, ContractHash: "h-review", Provider: "skills", Tokens: 400},
		{Name: "huge_skill", Kind: KindSkill, ContractHash: "h-huge", Provider: "skills", Tokens: 7000},
		{Name: "orphan", Kind: KindTool, ContractHash: "h-orphan", ReadOnly: true, Core: true},
	}
}

// testBudget: ceiling 8000, margin 400, base 1000.
var testBudget = Budget{UsableInput: 10000, Base: 1000}

type fixture struct {
	rt  *Runtime
	clk *clock.Fake
	led *MemLedger
	gen uint64
}

func newFixture(t tb) *fixture {
	t.Helper()
	clk := NewFakeClock()
	led := NewMemLedger()
	rt, err := New(Config{Clock: clk, Ledger: led, Key: []byte("test-node-key"), Grace: testGrace, DefaultProfile: "full"})
	if err != nil {
		t.Fatal(err)
	}
	gen, err := rt.SetCatalog("harn", testCatalog())
	if err != nil {
		t.Fatal(err)
	}
	// The session was given every grant: each test names its tasks' own
	// (sessiongrants_test.go tests what a session's grants do).
	if err := rt.OpenSession(testSession, SessionConfig{Catalog: "harn", Workdir: "/w", Budget: testBudget,
		Grants: []Grant{{Level: Execute, Capability: "*"}}}); err != nil {
		t.Fatal(err)
	}
	return &fixture{rt: rt, clk: clk, led: led, gen: gen}
}

var hashes = func() map[string]string {
	m := map[string]string{}
	for _, c := range testCatalog() {
		m[c.Name] = c.ContractHash
	}
	return m
}()

// req builds a call as the harn agent loop makes it: generation and
// contract hash stated.
func (f *fixture) req(name, input string) CallRequest {
	return CallRequest{Capability: name, Input: []byte(input), Generation: f.gen, ContractHash: hashes[name]}
}

func (f *fixture) start(t tb, text string, grants []Grant) string {
	t.Helper()
	v, err := f.rt.Start(testSession, Request{Text: text, Grants: grants})
	if err != nil {
		t.Fatal(err)
	}
	return v.ID
}

func (f *fixture) next(t tb) *Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := f.rt.Next(ctx, testSession)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (f *fixture) state(t tb, id string) TaskView {
	t.Helper()
	v, err := f.rt.Task(id)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (f *fixture) wantState(t tb, id string, st State, status Status) {
	t.Helper()
	v := f.state(t, id)
	if v.State != st || (status != "" && v.Status != status) {
		t.Fatalf("task %s is %s %s, want %s %s", id, v.State, v.Status, st, status)
	}
}

func (f *fixture) begin(t tb, task, name, input string) *Call {
	t.Helper()
	c, err := f.rt.Begin(task, f.req(name, input))
	if err != nil {
		t.Fatalf("begin %s: %v", name, err)
	}
	return c
}

func wantErr(t tb, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want %v", err, target)
	}
}

func wantCheck(t tb, err error, c Check) {
	t.Helper()
	var re *RefusalError
	if !errors.As(err, &re) || re.Check != c {
		t.Fatalf("error %v, want a refusal by the %s check", err, c)
	}
}

// tb is what the helpers need from *testing.T, *testing.B and *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}
