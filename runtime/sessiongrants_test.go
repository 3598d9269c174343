package runtime

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// openBare opens a session that was given no grants yet: its first task
// fixes them.
func (f *fixture) openBare(t *testing.T, id string) {
	t.Helper()
	if err := f.rt.OpenSession(id, SessionConfig{Catalog: "harn", Workdir: "/w", Budget: testBudget}); err != nil {
		t.Fatal(err)
	}
}

func grantsOfTask(t *testing.T, f *fixture, id string) []Grant {
	t.Helper()
	v, err := f.rt.Grants(id)
	if err != nil {
		t.Fatal(err)
	}
	return v.Grants
}

var editLike = []Grant{{Level: Load, Capability: "*"}, {Level: Execute, Capability: "read_file"}, {Level: Execute, Capability: "write_file"}}

// TestSessionGrantsHoldForLaterTasks: the grants a session's first task
// was given hold for every later task that names none: a follow-up, a
// supersede, a replace, and a task after the session went idle.
func TestSessionGrantsHoldForLaterTasks(t *testing.T) {
	f := newFixture(t)
	f.openBare(t, "s2")
	first, err := f.rt.Start("s2", Request{Text: "create a hello file", Grants: editLike})
	if err != nil {
		t.Fatal(err)
	}
	if g, _ := f.rt.SessionGrants("s2"); !slices.Equal(g, editLike) {
		t.Fatalf("session grants %v, want the first task's", g)
	}
	fu, err := f.rt.FollowUp("s2", Request{Text: "again"})
	if err != nil {
		t.Fatal(err)
	}
	sup, err := f.rt.Supersede("s2", Request{Text: "instead"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{fu.ID, sup.ID} {
		if g := grantsOfTask(t, f, id); !slices.Equal(g, editLike) {
			t.Fatalf("task %s holds %v, want the session's %v", id, g, editLike)
		}
	}
	if err := f.rt.Finish(first.ID, StatusSucceeded, ""); err != nil && !errors.Is(err, ErrTaskTerminal) {
		t.Fatal(err)
	}
	// An idle session's next start, a write in it passes the grant check.
	for {
		id, ok := f.rt.ActiveTask("s2")
		if !ok {
			break
		}
		_ = f.rt.Finish(id, StatusSucceeded, "")
	}
	next, err := f.rt.Start("s2", Request{Text: "create a hello file"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.rt.Check(next.ID, f.req("write_file", `{"file_path":"hello"}`)); err != nil {
		t.Fatalf("a write of the session's later task was refused: %v", err)
	}
}

// TestASessionsFirstTaskWithoutGrantsFixesTheDefault: a session whose
// first task names none is given the runtime's default, and keeps it.
func TestASessionsFirstTaskWithoutGrantsFixesTheDefault(t *testing.T) {
	clk := NewFakeClock()
	rt, err := New(Config{Clock: clk, Ledger: NewMemLedger(), Key: []byte("k"), DefaultProfile: "read-only"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.SetCatalog("harn", testCatalog()); err != nil {
		t.Fatal(err)
	}
	if err := rt.OpenSession("s", SessionConfig{Catalog: "harn", Budget: testBudget}); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Start("s", Request{Text: "look"}); err != nil {
		t.Fatal(err)
	}
	ro, _ := Profile("read-only")
	if g, _ := rt.SessionGrants("s"); !slices.Equal(g, ro) {
		t.Fatalf("session grants %v, want read-only", g)
	}
	full, _ := Profile("full")
	_, err = rt.FollowUp("s", Request{Text: "now write", Grants: full})
	var be *GrantsBeyondError
	if !errors.As(err, &be) {
		t.Fatalf("a follow-up wider than the default the session was given: %v", err)
	}
}

// TestSessionGrantsNeverGrow: a task that names grants beyond the
// session's is refused (nothing is queued); one that names narrower
// grants holds those, and the session's grants stay for the tasks after.
func TestSessionGrantsNeverGrow(t *testing.T) {
	f := newFixture(t)
	f.openBare(t, "s2")
	ro, _ := Profile("read-only")
	if _, err := f.rt.Start("s2", Request{Text: "look", Grants: editLike}); err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"follow-up", "supersede"} {
		wider := append(slices.Clone(editLike), Grant{Level: Execute, Capability: "shell"})
		var err error
		if op == "follow-up" {
			_, err = f.rt.FollowUp("s2", Request{Text: "run it", Grants: wider})
		} else {
			_, err = f.rt.Supersede("s2", Request{Text: "run it", Grants: wider})
		}
		var be *GrantsBeyondError
		if !errors.As(err, &be) || !errors.Is(err, ErrCeilingGrows) || be.Grant.Capability != "shell" || be.Session != "s2" {
			t.Fatalf("%s with a wider grant: %v", op, err)
		}
	}
	if v, _ := f.rt.Session("s2"); v.QueueDepth != 0 {
		t.Fatalf("a refused task was queued: %+v", v)
	}
	// confirm is a condition, not authority: dropping it is growing
	noConfirm := []Grant{{Level: Execute, Capability: "write_file"}}
	f.openBare(t, "s3")
	if _, err := f.rt.Start("s3", Request{Text: "a", Grants: []Grant{{Level: Execute, Capability: "write_file", Confirm: true}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.rt.FollowUp("s3", Request{Text: "b", Grants: noConfirm}); !errors.Is(err, ErrCeilingGrows) {
		t.Fatalf("a follow-up without the session's confirmation: %v", err)
	}
	// narrower is fine, and does not narrow the session
	narrow := []Grant{{Level: Execute, Capability: "read_file"}}
	n, err := f.rt.FollowUp("s2", Request{Text: "only read", Grants: narrow})
	if err != nil {
		t.Fatal(err)
	}
	if g := grantsOfTask(t, f, n.ID); !slices.Equal(g, narrow) {
		t.Fatalf("the narrower follow-up holds %v", g)
	}
	after, err := f.rt.FollowUp("s2", Request{Text: "then write"})
	if err != nil {
		t.Fatal(err)
	}
	if g := grantsOfTask(t, f, after.ID); !slices.Equal(g, editLike) {
		t.Fatalf("a narrower task narrowed the session: the next holds %v", g)
	}
	// every profile holds read-only's grants: a read-only task fits any session
	for _, p := range ProfileNames() {
		g, _ := Profile(p)
		if bad, ok := Within(ro, g); !ok {
			t.Errorf("profile %s does not hold read-only's %v", p, bad)
		}
	}
}

// TestEachTaskOfASessionGetsAFreshCapabilityState: the session's grants
// carry over, the task's capability state does not (seed 000).
func TestEachTaskOfASessionGetsAFreshCapabilityState(t *testing.T) {
	f := newFixture(t)
	f.openBare(t, "s2")
	grants := []Grant{{Level: Execute, Capability: "*"}}
	a, err := f.rt.Start("s2", Request{Text: "a", Grants: grants})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.rt.Load(a.ID, "search"); err != nil {
		t.Fatal(err)
	}
	if err := f.rt.ReduceBy(a.ID, "read_file", Load, "op", "no reads"); err != nil {
		t.Fatal(err)
	}
	if err := f.rt.Finish(a.ID, StatusSucceeded, ""); err != nil {
		t.Fatal(err)
	}
	b, err := f.rt.Start("s2", Request{Text: "b"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.rt.Check(b.ID, f.req("search", `{}`))
	wantCheck(t, err, CheckLoad) // loaded schemas were a's
	if _, err := f.rt.Check(b.ID, f.req("read_file", `{"file_path":"x"}`)); err != nil {
		t.Fatalf("a's reduction reached b: %v", err)
	}
}

// TestReopenSessionKeepsItsGrants: a session opened again after its loop
// stopped keeps what it was given, or takes the grants its stored record
// names after a restart.
func TestReopenSessionKeepsItsGrants(t *testing.T) {
	f := newFixture(t)
	f.openBare(t, "s2")
	a, err := f.rt.Start("s2", Request{Text: "a", Grants: editLike})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.rt.ReopenSession("s2", SessionConfig{Catalog: "harn", Budget: testBudget}); !errors.Is(err, ErrTaskActive) {
		t.Fatalf("reopening a busy session: %v", err)
	}
	_ = f.rt.Finish(a.ID, StatusSucceeded, "")
	if err := f.rt.ReopenSession("s2", SessionConfig{Catalog: "harn", Workdir: "/other", Budget: testBudget}); err != nil {
		t.Fatal(err)
	}
	if g, _ := f.rt.SessionGrants("s2"); !slices.Equal(g, editLike) {
		t.Fatalf("reopened with %v", g)
	}
	// a session the runtime does not hold (a restart) takes the stored grants
	if err := f.rt.ReopenSession("s9", SessionConfig{Catalog: "harn", Budget: testBudget, Grants: editLike}); err != nil {
		t.Fatal(err)
	}
	v, err := f.rt.Start("s9", Request{Text: "again"})
	if err != nil {
		t.Fatal(err)
	}
	if g := grantsOfTask(t, f, v.ID); !slices.Equal(g, editLike) {
		t.Fatalf("after the restart the task holds %v", g)
	}
}

// TestCoversTakesInOnlyWhatItGives: Within decides grant by grant, and
// refuses what it cannot prove.
func TestCoversTakesInOnlyWhatItGives(t *testing.T) {
	ex := func(c string) Grant { return Grant{Level: Execute, Capability: c} }
	cases := []struct {
		p, g Grant
		want bool
	}{
		{ex("*"), ex("shell"), true},
		{ex("*"), ex("mcp__gh__*"), true},
		{ex("mcp__*"), ex("mcp__gh__*"), true},
		{ex("mcp__gh__*"), ex("mcp__*"), false},
		{ex("a*c"), ex("a*"), false},
		{ex("read"), ex("read_*"), false},
		{ex("read_*"), ex("read_file"), true},
		{Grant{Level: Load, Capability: "*"}, ex("shell"), false},
		{ex("shell"), Grant{Level: Load, Capability: "shell"}, true},
		{Grant{Level: Execute, Capability: "shell", Match: "git *"}, ex("shell"), false},
		{ex("shell"), Grant{Level: Execute, Capability: "shell", Match: "git *"}, true},
		{Grant{Level: Execute, Capability: "shell", Confirm: true}, ex("shell"), false},
		{ex("shell"), Grant{Level: Execute, Capability: "shell", Confirm: true}, true},
	}
	for _, c := range cases {
		if got := Covers(c.p, c.g); got != c.want {
			t.Errorf("Covers(%s, %s) = %v", FormatGrants([]Grant{c.p}), FormatGrants([]Grant{c.g}), got)
		}
	}
}

// TestRefusedCallsAreInTheTaskView: a task names the calls the runtime
// refused, the first MaxRefusedCalls of them, and counts them all.
func TestRefusedCallsAreInTheTaskView(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", []Grant{{Level: Execute, Capability: "read_file"}})
	f.next(t)
	if v := f.state(t, a); v.Refused != 0 || v.RefusedCalls != nil {
		t.Fatalf("no refusal yet: %+v", v)
	}
	for i := range MaxRefusedCalls + 2 {
		if _, err := f.rt.Begin(a, f.req("write_file", fmt.Sprintf(`{"file_path":"x%d"}`, i))); err == nil {
			t.Fatal("write passed")
		}
	}
	if _, err := f.rt.Begin(a, f.req("read_file", `{"file_path":"x"}`)); err != nil {
		t.Fatal(err)
	}
	v := f.state(t, a)
	if v.Refused != MaxRefusedCalls+2 || len(v.RefusedCalls) != MaxRefusedCalls ||
		v.RefusedCalls[0] != (RefusedCall{Capability: "write_file", Check: string(CheckGrant)}) {
		t.Fatalf("view %+v", v)
	}
}

// TestConfirmProfileAsksBeforeWriting: confirm reads without asking and
// makes every other call wait for a confirmation.
func TestConfirmProfileAsksBeforeWriting(t *testing.T) {
	f := newFixture(t)
	g, err := Profile("confirm")
	if err != nil {
		t.Fatal(err)
	}
	a := f.start(t, "a", g)
	f.next(t)
	r := f.begin(t, a, "read_file", `{"file_path":"x"}`)
	if r.Pending {
		t.Fatal("a read waits for a confirmation")
	}
	w := f.begin(t, a, "write_file", `{"file_path":"x"}`)
	if !w.Pending {
		t.Fatal("a write under confirm runs without a confirmation")
	}
	if _, err := f.rt.Load(a, "shell"); err != nil {
		t.Fatal(err)
	}
	if s := f.begin(t, a, "shell", `{"command":"ls"}`); !s.Pending {
		t.Fatal("a shell under confirm runs without a confirmation")
	}
}

// TestProfilesTableComesFromTheGrants: what `harn profiles` prints is
// the ceiling of each profile's grants over harn's tools.
func TestProfilesTableComesFromTheGrants(t *testing.T) {
	want := map[string][]string{
		"read-only": {ToolRuns, ToolNo, ToolNo, ToolNo},
		"confirm":   {ToolRuns, ToolAsks, ToolAsks, ToolAsks},
		"edit":      {ToolRuns, ToolRuns, ToolNo, ToolNo},
		"full":      {ToolRuns, ToolRuns, ToolRuns, ToolRuns},
	}
	ps := Profiles()
	if len(ps) != len(want) {
		t.Fatalf("%d profiles", len(ps))
	}
	for _, p := range ps {
		if !slices.Equal(p.Tools, want[p.Name]) || p.Summary == "" {
			t.Errorf("%s: %v %q", p.Name, p.Tools, p.Summary)
		}
		g, _ := Profile(p.Name)
		if !slices.Equal(p.Grants, g) {
			t.Errorf("%s: the table's grants are not the profile's", p.Name)
		}
		if p.Default != (p.Name == DefaultAgentProfile) {
			t.Errorf("%s: default %v", p.Name, p.Default)
		}
	}
}
