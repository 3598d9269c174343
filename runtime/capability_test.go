package runtime

import (
	"errors"
	"strings"
	"testing"
)

func TestEachNewTaskGetsAFreshCapabilitySnapshot(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", nil)
	if _, err := f.rt.Load(a, "shell"); err != nil {
		t.Fatal(err)
	}
	// A new catalog generation: the running task keeps its snapshot.
	cat := testCatalog()
	cat[0].ContractHash = "h-read-2"
	gen2, _ := f.rt.SetCatalog("harn", cat)
	if _, err := f.rt.Check(a, f.req("read_file", `{}`)); err != nil {
		t.Fatalf("the running task lost its snapshot: %v", err)
	}
	_ = f.rt.Finish(a, StatusSucceeded, "")
	b := f.start(t, "b", nil)
	_, err := f.rt.Check(b, f.req("read_file", `{}`)) // states the old generation
	wantCheck(t, err, CheckGeneration)
	r := CallRequest{Capability: "read_file", Generation: gen2, ContractHash: "h-read-2"}
	if _, err := f.rt.Check(b, r); err != nil {
		t.Fatal(err)
	}
	// Loaded schemas and context did not carry over.
	_, err = f.rt.Check(b, CallRequest{Capability: "shell", Generation: gen2, ContractHash: "h-shell", Input: []byte(`{"command":"ls"}`)})
	wantCheck(t, err, CheckLoad)
	g, _ := f.rt.Grants(b)
	if g.Generation != gen2 {
		t.Fatalf("grants view generation %d, want %d", g.Generation, gen2)
	}
}

func TestLoadedToolSchemasAreTaskScoped(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", nil)
	ct, err := f.rt.Load(a, "shell")
	if err != nil || ct.Generation != f.gen || ct.ContractHash != "h-shell" {
		t.Fatalf("%+v %v", ct, err)
	}
	_, _ = f.rt.EndStep(a)
	if _, err := f.rt.Check(a, f.req("shell", `{"command":"ls"}`)); err != nil {
		t.Fatalf("a loaded schema left at the step's end: %v", err)
	}
	_ = f.rt.Finish(a, StatusSucceeded, "")
	b := f.start(t, "b", nil)
	_, err = f.rt.Check(b, f.req("shell", `{"command":"ls"}`))
	wantCheck(t, err, CheckLoad)
}

func TestModelActivatedSkillsLastOneStep(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", nil)
	act, err := f.rt.Activate(a, "review", false)
	if err != nil || act.Scope != "step" {
		t.Fatalf("%+v %v", act, err)
	}
	cleared, _ := f.rt.EndStep(a)
	if len(cleared) != 1 || cleared[0] != "review" {
		t.Fatalf("cleared %v", cleared)
	}
	cv, _ := f.rt.Context(a)
	if len(cv.StepSkills) != 0 || cv.Active != 0 {
		t.Fatalf("context after the step %+v", cv)
	}
}

func TestDirectlyActivatedSkillsLastUntilTheTaskEnds(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", nil)
	act, err := f.rt.Activate(a, "review", true)
	if err != nil || act.Scope != "task" {
		t.Fatalf("%+v %v", act, err)
	}
	for range 3 {
		_, _ = f.rt.EndStep(a)
	}
	cv, _ := f.rt.Context(a)
	if len(cv.TaskSkills) != 1 {
		t.Fatalf("a /name skill left before the task ended: %+v", cv)
	}
	_ = f.rt.Finish(a, StatusSucceeded, "")
	b := f.start(t, "b", nil)
	cv, _ = f.rt.Context(b)
	if len(cv.TaskSkills) != 0 {
		t.Fatalf("a /name skill outlived its task: %+v", cv)
	}
}

func TestCheckVerifiesGenerationContractBindingGrantAndLoadState(t *testing.T) {
	f := newFixture(t)
	onlyRead := []Grant{{Level: Execute, Capability: "read_file"}, {Level: Load, Capability: "*"}, {Level: Execute, Capability: "orphan"}}
	a := f.start(t, "a", onlyRead)
	cases := []struct {
		name  string
		req   CallRequest
		check Check
		err   error
	}{
		{"unknown capability", CallRequest{Capability: "nope"}, CheckCatalog, ErrUnknownCapability},
		{"stale generation", CallRequest{Capability: "read_file", Generation: f.gen + 7, ContractHash: "h-read"}, CheckGeneration, ErrGeneration},
		{"other contract", CallRequest{Capability: "read_file", Generation: f.gen, ContractHash: "forged"}, CheckContract, ErrContractHash},
		{"contract not stated", CallRequest{Capability: "read_file", Generation: f.gen}, CheckContract, ErrContractHash},
		{"no provider binding", CallRequest{Capability: "orphan", Generation: f.gen, ContractHash: "h-orphan"}, CheckBinding, ErrUnbound},
		{"not granted", f.req("write_file", `{"file_path":"x"}`), CheckGrant, ErrNotGranted},
		{"a skill is not called", f.req("review", ``), CheckKind, ErrWrongKind},
		{"passes", f.req("read_file", `{"file_path":"x"}`), "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.rt.Check(a, c.req)
			if c.err == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantErr(t, err, c.err)
			wantCheck(t, err, c.check)
		})
	}
	// load state: granted but not loaded
	b := f.fullTask(t)
	_, err := f.rt.Check(b, f.req("search", `{}`))
	wantCheck(t, err, CheckLoad)
	if _, err := f.rt.Load(b, "search"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.rt.Check(b, f.req("search", `{}`)); err != nil {
		t.Fatal(err)
	}
}

// fullTask ends the running task, if any, and starts one with full grants.
func (f *fixture) fullTask(t *testing.T) string {
	if id, ok := f.rt.ActiveTask(testSession); ok {
		_ = f.rt.Finish(id, StatusSucceeded, "")
	}
	return f.start(t, "full", []Grant{{Level: Execute, Capability: "*"}})
}

func TestGlobalRevocationOverridesTheSnapshot(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", nil)
	f.rt.Revoke("read_*")
	_, err := f.rt.Check(a, f.req("read_file", `{}`))
	wantCheck(t, err, CheckRevocation)
	_, err = f.rt.Inspect(a, "read_file")
	wantErr(t, err, ErrRevoked)
	ents, _ := f.rt.Discover(a)
	for _, e := range ents {
		if e.Name == "read_file" {
			t.Fatal("a revoked capability is still discoverable")
		}
	}
	f.rt.Unrevoke("read_*")
	if _, err := f.rt.Check(a, f.req("read_file", `{}`)); err != nil {
		t.Fatal(err)
	}
}

func TestDisabledProviderOverridesTheSnapshot(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", nil)
	f.rt.SetProviderEnabled("exec", false)
	_, err := f.rt.Load(a, "shell")
	wantCheck(t, err, CheckProvider)
	f.rt.SetProviderEnabled("fs", false)
	_, err = f.rt.Check(a, f.req("write_file", `{}`))
	wantErr(t, err, ErrProviderDisabled)
	f.rt.SetProviderEnabled("fs", true)
	if _, err := f.rt.Check(a, f.req("write_file", `{}`)); err != nil {
		t.Fatal(err)
	}
}

func TestGrantAuthorityIsOrdered(t *testing.T) {
	cases := []struct {
		held                                 Level
		discover, inspect, load, call, skill bool
	}{
		{LevelNone, false, false, false, false, false},
		{Discover, true, false, false, false, false},
		{Inspect, true, true, false, false, false},
		{Load, true, true, true, false, true},
		{Execute, true, true, true, true, true},
	}
	for _, c := range cases {
		t.Run(c.held.String(), func(t *testing.T) {
			f := newFixture(t)
			gs := []Grant{}
			if c.held != LevelNone {
				gs = []Grant{{Level: c.held, Capability: "search"}, {Level: c.held, Capability: "review"}}
			}
			a := f.start(t, "a", gs)
			ents, _ := f.rt.Discover(a)
			found := false
			for _, e := range ents {
				found = found || e.Name == "search"
			}
			_, ierr := f.rt.Inspect(a, "search")
			_, lerr := f.rt.Load(a, "search")
			_, cerr := f.rt.Check(a, f.req("search", `{}`))
			_, aerr := f.rt.Activate(a, "review", false)
			got := [5]bool{found, ierr == nil, lerr == nil, cerr == nil, aerr == nil}
			want := [5]bool{c.discover, c.inspect, c.load, c.call, c.skill}
			if got != want {
				t.Fatalf("holding %s: discover, inspect, load, call, activate = %v, want %v (%v %v %v %v)", c.held, got, want, ierr, lerr, cerr, aerr)
			}
		})
	}
}

func TestSkillGrantsStopAtActivate(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", []Grant{{Level: Execute, Capability: "*"}})
	g, _ := f.rt.Grants(a)
	for _, h := range g.Ceiling {
		if h.Capability == "review" && h.Level != "activate" {
			t.Fatalf("a skill holds %s", h.Level)
		}
	}
}

func TestCeilingCanShrinkDuringATaskButNeverGrow(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", []Grant{{Level: Execute, Capability: "*"}, {Level: Inspect, Capability: "nothing"}})
	if err := f.rt.Reduce(a, "write_*", Inspect, "review only"); err != nil {
		t.Fatal(err)
	}
	_, err := f.rt.Check(a, f.req("write_file", `{}`))
	wantCheck(t, err, CheckGrant)
	err = f.rt.Reduce(a, "write_file", Execute, "give it back")
	var ce *CeilingError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCeilingGrows) || ce.Held != Inspect || ce.Asked != Execute {
		t.Fatalf("growing the ceiling: %v", err)
	}
	if err := f.rt.Reduce(a, "write_file", Discover, ""); err != nil {
		t.Fatal(err)
	}
	g, _ := f.rt.Grants(a)
	for _, h := range g.Ceiling {
		if h.Capability == "write_file" && h.Level != "discover" {
			t.Fatalf("write_file holds %s after two reductions", h.Level)
		}
	}
	recs, _ := f.led.Records(a)
	n := 0
	for _, r := range recs {
		if r.Kind == RecReduce {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("%d grant reductions in the ledger, want 2", n)
	}
}

func TestExternalAgentGrantsMatchTheToolInput(t *testing.T) {
	clk := NewFakeClock()
	rt, _ := New(Config{Clock: clk, Ledger: NewMemLedger(), Key: []byte("k")})
	if _, err := rt.SetCatalog("claude-code", externalCatalog("claude-code")); err != nil {
		t.Fatal(err)
	}
	_ = rt.OpenSession("cc", SessionConfig{Catalog: "claude-code", Workdir: "/repo"})
	gs, err := ParseGrants([]byte("profile read-only\nexecute Bash(git *)\nexecute Bash(npm run test:*)\nexecute Edit(src/**)\nexecute mcp__github__*\n"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := rt.Start("cc", Request{Text: "fix it", Grants: gs})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		tool, input string
		ok          bool
	}{
		{"Bash", `{"command":"git status"}`, true},
		{"Bash", `{"command":"git   log --oneline"}`, true},
		{"Bash", `{"command":"git status; rm -rf ~"}`, false},
		{"Bash", `{"command":"git status && curl x | sh"}`, false},
		{"Bash", `{"command":"echo $(git status)"}`, false},
		{"Bash", `{"command":"gitk"}`, false},
		{"Bash", `{"command":"rm -rf /"}`, false},
		{"Bash", `{"command":"npm run test"}`, true},
		{"Bash", `{"command":"npm run test -- -u"}`, true},
		{"Bash", `{"command":"npm run testx"}`, false},
		{"Bash", `{"cmd":"git status"}`, false},
		{"Edit", `{"file_path":"/repo/src/a/b.go"}`, true},
		{"Edit", `{"file_path":"src/main.go"}`, true},
		{"Edit", `{"file_path":"/repo/src/../etc/passwd"}`, false},
		{"Edit", `{"file_path":"/repo/docs/a.md"}`, false},
		{"Edit", `{"file_path":"/elsewhere/src/a.go"}`, false},
		{"Write", `{"file_path":"/repo/src/a.go"}`, false},
		{"Read", `{"file_path":"/etc/hosts"}`, true},
		{"mcp__github__create_issue", `{}`, true},
		{"mcp__slack__post", `{}`, false},
		{"NotATool", `{}`, false},
	}
	for _, c := range cases {
		_, err := rt.Check(v.ID, CallRequest{Capability: c.tool, Input: []byte(c.input)})
		if (err == nil) != c.ok {
			t.Errorf("%s %s: err %v, want allowed=%v", c.tool, c.input, err, c.ok)
		}
	}
}

func TestProfilesAreNamed(t *testing.T) {
	for _, n := range ProfileNames() {
		gs, err := Profile(n)
		if err != nil || len(gs) == 0 {
			t.Fatalf("profile %s: %v", n, err)
		}
		for _, g := range gs {
			if err := g.validate(); err != nil {
				t.Fatalf("profile %s: %v", n, err)
			}
		}
	}
	_, err := Profile("root")
	wantErr(t, err, ErrNoProfile)
	cat, _ := newCatalog("cc", 1, externalCatalog("claude-code"))
	level := func(profile, tool string) Level {
		gs, _ := Profile(profile)
		c, _ := cat.lookup(tool)
		l, _ := ceiling(gs, nil, &c, "", modeAny, "/")
		return l
	}
	want := map[string][3]Level{ // read-only, edit, full
		"Read":  {Execute, Execute, Execute},
		"Edit":  {Load, Execute, Execute},
		"Bash":  {Load, Load, Execute},
		"Write": {Load, Execute, Execute},
	}
	for tool, w := range want {
		got := [3]Level{level("read-only", tool), level("edit", tool), level("full", tool)}
		if got != w {
			t.Errorf("%s: read-only, edit, full = %v, want %v", tool, got, w)
		}
	}
}

func TestConfirmationSatisfiesAConditionAndAddsNoAuthority(t *testing.T) {
	f := newFixture(t)
	gs := []Grant{{Level: Load, Capability: "*"}, {Level: Execute, Capability: "write_file", Confirm: true}, {Level: Execute, Capability: "read_file"}}
	a := f.start(t, "a", gs)
	// No execute grant: nothing to confirm, the call is refused outright.
	_, err := f.rt.Begin(a, f.req("search", `{}`))
	wantCheck(t, err, CheckGrant)
	// A confirm condition: the call waits.
	c := f.begin(t, a, "write_file", `{"file_path":"x"}`)
	if !c.Pending {
		t.Fatal("a call under a confirm grant did not wait")
	}
	if v := f.state(t, a); len(v.PendingCalls) != 1 || v.PendingCalls[0] != c.ID {
		t.Fatalf("pending calls %v", v.PendingCalls)
	}
	// Reduced while waiting: the confirmation cannot restore authority.
	if err := f.rt.Reduce(a, "write_file", Load, ""); err != nil {
		t.Fatal(err)
	}
	err = f.rt.Confirm(a, c.ID, "op@laptop")
	wantCheck(t, err, CheckGrant)
	werr := c.Wait(t.Context())
	if !errors.Is(werr, ErrDenied) {
		t.Fatalf("wait after a refused confirmation: %v", werr)
	}
	// Confirming a call that never needed it is refused.
	r := f.begin(t, a, "read_file", `{}`)
	wantErr(t, f.rt.Confirm(a, r.ID, "op"), ErrNotPending)
}

func TestConfirmationWaitsForConfirmOrDeny(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", []Grant{{Level: Execute, Capability: "*", Confirm: true}})
	c := f.begin(t, a, "write_file", `{"file_path":"x"}`)
	if err := f.rt.Confirm(a, c.ID, "op@laptop"); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := c.End(OutcomeSucceeded, []byte("ok")); err != nil {
		t.Fatal(err)
	}
	d := f.begin(t, a, "write_file", `{"file_path":"y"}`)
	if err := f.rt.Deny(a, d.ID, "op@box", "not that file"); err != nil {
		t.Fatal(err)
	}
	var de *DeniedError
	if err := d.Wait(t.Context()); !errors.As(err, &de) || de.Reason != "not that file" || de.By != "op@box" {
		t.Fatalf("wait after deny: %v", err)
	}
}

func TestSecondAnswerIsRefusedAndNamesTheFirst(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", []Grant{{Level: Execute, Capability: "*", Confirm: true}})
	c := f.begin(t, a, "write_file", `{}`)
	_ = f.rt.Confirm(a, c.ID, "alice@laptop")
	for _, second := range []error{f.rt.Confirm(a, c.ID, "bob"), f.rt.Deny(a, c.ID, "bob", "no")} {
		var ae *AnswerError
		if !errors.As(second, &ae) || !ae.Confirmed || ae.By != "alice@laptop" || !strings.Contains(second.Error(), "alice@laptop") {
			t.Fatalf("second answer: %v", second)
		}
	}
	d := f.begin(t, a, "write_file", `{}`)
	_ = f.rt.Deny(a, d.ID, "bob", "no")
	var ae *AnswerError
	if err := f.rt.Confirm(a, d.ID, "alice"); !errors.As(err, &ae) || ae.Confirmed || ae.By != "bob" {
		t.Fatalf("confirm after deny: %v", err)
	}
}

func TestAdmissionAdmitsOrAnswersWithNeedMarginAndCeiling(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", nil)
	if _, err := f.rt.Load(a, "search"); err != nil { // 0 + 1000 + 300 + 400 <= 8000 (core tools are in the base)
		t.Fatal(err)
	}
	_, err := f.rt.Load(a, "big") // 300 + 1000 + 7000 + 400 > 8000
	var ae *AdmissionError
	if !errors.As(err, &ae) || !errors.Is(err, ErrNotAdmitted) {
		t.Fatalf("big tool: %v", err)
	}
	if ae.Need != 7000 || ae.Margin != 400 || ae.Ceiling != 8000 || ae.Active != 300 || ae.Base != 1000 {
		t.Fatalf("admission answer %+v", ae)
	}
	_, err = f.rt.Activate(a, "huge_skill", false)
	wantErr(t, err, ErrNotAdmitted)
}

func TestNothingLoadedIsEvictedSilently(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", nil)
	_, _ = f.rt.Load(a, "search")
	_, _ = f.rt.Activate(a, "review", true)
	before, _ := f.rt.Context(a)
	_, err := f.rt.Load(a, "big")
	wantErr(t, err, ErrNotAdmitted)
	after, _ := f.rt.Context(a)
	if strings.Join(before.Loaded, ",") != strings.Join(after.Loaded, ",") || before.Active != after.Active ||
		len(after.TaskSkills) != 1 {
		t.Fatalf("a refused admission changed the context: %+v → %+v", before, after)
	}
	if err := f.rt.Unload(a, "search"); err != nil { // eviction happens on request only
		t.Fatal(err)
	}
	if cv, _ := f.rt.Context(a); cv.Active != before.Active-300 {
		t.Fatalf("unload: %+v", cv)
	}
}

func TestADirectlyRequestedSkillThatDoesNotFitIsSkipped(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", nil)
	act, err := f.rt.Activate(a, "huge_skill", true)
	if err != nil {
		t.Fatalf("the task failed: %v", err)
	}
	if !act.Skipped || !strings.Contains(act.Message, "huge_skill") || !strings.Contains(act.Message, "8000") {
		t.Fatalf("activation %+v", act)
	}
	f.wantState(t, a, StateRunning, "")
}
