package runtime

import (
	"errors"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// A grant with an input pattern and a confirm condition re-checks at
// Confirm against the same command or path: the call's raw input is gone
// by then, but its subject is kept.
func TestConfirmationOfAPatternedGrantRechecksTheSameSubject(t *testing.T) {
	for _, tc := range []struct {
		name, tool, input string
		grant             Grant
	}{
		{"command", "shell", `{"command":"git status"}`, Grant{Level: Execute, Capability: "shell", Match: "git *", Confirm: true}},
		{"path", "write_file", `{"file_path":"src/app.go","content":"x"}`, Grant{Level: Execute, Capability: "write_file", Match: "src/**", Confirm: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			a := f.start(t, "a", []Grant{{Level: Load, Capability: "*"}, tc.grant})
			f.next(t)
			if _, err := f.rt.Load(a, tc.tool); err != nil && tc.tool == "shell" {
				t.Fatal(err)
			}
			c := f.begin(t, a, tc.tool, tc.input)
			if !c.Pending {
				t.Fatal("a call under a confirm grant did not wait")
			}
			if err := f.rt.Confirm(a, c.ID, "op@laptop"); err != nil {
				t.Fatalf("confirmation of a matching call: %v", err)
			}
			if err := c.Wait(t.Context()); err != nil {
				t.Fatalf("wait: %v", err)
			}
			if v := f.state(t, a); len(v.PendingCalls) != 0 {
				t.Fatalf("still pending: %v", v.PendingCalls)
			}
		})
	}
}

// The stored call holds the input's digest and its subject, never the raw
// input.
func TestAStoredCallKeepsNoRawInput(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", []Grant{{Level: Load, Capability: "*"}, {Level: Execute, Capability: "shell", Match: "git *", Confirm: true}})
	f.next(t)
	if _, err := f.rt.Load(a, "shell"); err != nil {
		t.Fatal(err)
	}
	c := f.begin(t, a, "shell", `{"command":"git log","secret":"hunter2"}`)
	if c.c.req.Input != nil || c.c.req.Subject != "git log" || c.c.input == "" || strings.Contains(c.c.input, "hunter2") {
		t.Fatalf("stored call: %+v digest %q", c.c.req, c.c.input)
	}
}

// A repeated call id gets the first decision: a pending call is the same
// call (and waits), a denial stays a denial, a refusal stays a refusal
// even once the call would pass.
func TestARepeatedCallIDGetsTheFirstDecision(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", []Grant{{Level: Execute, Capability: "read_file"}, {Level: Execute, Capability: "write_file", Confirm: true}})
	f.next(t)
	req := f.req("write_file", `{"file_path":"/w/x"}`)
	req.ID = "toolu_1"
	c, err := f.rt.Begin(a, req)
	if err != nil || !c.Pending {
		t.Fatalf("begin: %v %+v", err, c)
	}
	if _, err := f.rt.Begin(a, req); !errors.Is(err, ErrDuplicateCall) {
		t.Fatalf("a repeat must not begin a second call: %v", err)
	}
	p, err := f.rt.Prior(a, "toolu_1")
	if err != nil || !p.Pending {
		t.Fatalf("prior of a pending call: %v %+v", err, p)
	}
	if err := f.rt.Deny(a, "toolu_1", "op", "not now"); err != nil {
		t.Fatal(err)
	}
	var de *DeniedError
	if _, err := f.rt.Prior(a, "toolu_1"); !errors.As(err, &de) || de.By != "op" {
		t.Fatalf("prior of a denied call: %v", err)
	}
	// A refusal is remembered under its id.
	sh := f.req("shell", `{"command":"ls"}`)
	sh.ID = "toolu_2"
	if _, err := f.rt.Begin(a, sh); err == nil {
		t.Fatal("shell is not granted")
	}
	if _, err := f.rt.Begin(a, sh); !errors.Is(err, ErrDuplicateCall) {
		t.Fatalf("a repeat of a refused call: %v", err)
	}
	if _, err := f.rt.Prior(a, "toolu_2"); !errors.Is(err, ErrNotGranted) {
		t.Fatalf("prior of a refused call: %v", err)
	}
	if err := f.rt.Confirm(a, "toolu_2", "op"); !errors.Is(err, ErrNotPending) {
		t.Fatalf("confirming a refused call: %v", err)
	}
}

// A replacement keeps the reductions of the task it replaces, whether it
// replaces a blocked follow-up or supersedes a running task (a reduction
// made during the barrier included).
func TestAReplacementKeepsThePredecessorsReductions(t *testing.T) {
	f := newFixture(t)
	full := []Grant{{Level: Execute, Capability: "*"}}
	a := f.start(t, "a", full)
	r := f.next(t)
	if err := f.rt.Reduce(a, "shell", Inspect, "no shell"); err != nil {
		t.Fatal(err)
	}
	b, err := f.rt.Supersede(testSession, Request{Text: "b", Grants: full})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.rt.Reduce(a, "write_file", Load, "no writes"); err != nil {
		t.Fatal(err)
	}
	if err := r.Finish(StatusFailed, ""); err != nil {
		t.Fatal(err)
	}
	f.wantState(t, b.ID, StateRunning, "")
	g, err := f.rt.Grants(b.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range g.Ceiling {
		if (h.Capability == "shell" && h.Level != "inspect") || (h.Capability == "write_file" && h.Level != "load") {
			t.Fatalf("the replacement regained %s: %s", h.Capability, h.Level)
		}
	}
	if _, err := f.rt.Check(b.ID, f.req("write_file", `{"file_path":"/w/x"}`)); !errors.Is(err, ErrNotGranted) {
		t.Fatalf("a write in the replacement: %v", err)
	}
	recs, _ := f.led.Records(b.ID)
	kept := 0
	for _, rc := range recs {
		if rc.Kind == RecReduce && strings.HasPrefix(rc.Reason, "kept from "+a) {
			kept++
		}
	}
	if kept != 2 {
		t.Fatalf("the replacement's ledger records %d kept reductions, want 2: %+v", kept, recs)
	}
}

// SetOverrides applies the mesh's switches and records each change in the
// ledger of every live task.
func TestGlobalOverridesAreRecordedInEveryLiveTask(t *testing.T) {
	f := newFixture(t)
	a := f.start(t, "a", []Grant{{Level: Execute, Capability: "*"}})
	f.next(t)
	ch := f.rt.SetOverrides(Overrides{Revoked: []string{"search"}, Disabled: []string{"exec"}}, "operator@n2")
	if len(ch) != 2 {
		t.Fatalf("changes: %+v", ch)
	}
	if _, err := f.rt.Check(a, f.req("search", `{}`)); !errors.Is(err, ErrRevoked) {
		t.Fatalf("revoked: %v", err)
	}
	if again := f.rt.SetOverrides(Overrides{Revoked: []string{"search"}, Disabled: []string{"exec"}}, "x"); len(again) != 0 {
		t.Fatalf("the same set again changed %+v", again)
	}
	f.rt.SetOverrides(Overrides{}, "operator@n1")
	if _, err := f.rt.Check(a, f.req("search", `{}`)); err != nil && !errors.Is(err, ErrNotLoaded) {
		t.Fatalf("restored: %v", err)
	}
	recs, _ := f.led.Records(a)
	var kinds []string
	for _, r := range recs {
		switch r.Kind {
		case RecRevoke, RecRestore, RecProviderOff, RecProviderOn:
			kinds = append(kinds, string(r.Kind)+":"+r.By)
		}
	}
	if len(kinds) != 4 {
		t.Fatalf("recorded: %v", kinds)
	}
}

// levelOf is a call's effective level: execute when it passes the checks
// (after its confirmation), else below.
func propLevel(f *fixture, task string, req CallRequest) Level {
	t, err := f.rt.lock(task)
	if err != nil {
		return LevelNone
	}
	defer t.s.mu.Unlock()
	c, ok := t.snap.lookup(req.Capability)
	if !ok {
		return LevelNone
	}
	lvl, _ := ceiling(t.grants, t.limits, &c, SubjectOf(c.Subject, req.Input), modeCall, t.s.cfg.Workdir)
	return lvl
}

// Property: a confirmation never raises the effective level. Whatever
// grants, reductions and revocations come between a call's wait and its
// confirmation, a confirmed call held execute at the moment of the
// confirmation, and a call that did not is denied.
func TestPropertyAConfirmationNeverRaisesTheEffectiveLevel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		f := newFixture(rt)
		cmd := rapid.SampledFrom([]string{"git status", "git log", "rm -rf /", "git status; rm x"}).Draw(rt, "cmd")
		grants := []Grant{{Level: Load, Capability: "*"}, {Level: Execute, Capability: "shell", Match: rapid.SampledFrom([]string{"git *", "git status", "*"}).Draw(rt, "match"), Confirm: true}}
		a := f.start(rt, "a", grants)
		f.next(rt)
		if _, err := f.rt.Load(a, "shell"); err != nil {
			rt.Fatal(err)
		}
		req := f.req("shell", `{"command":"`+cmd+`"}`)
		before := propLevel(f, a, req)
		c, err := f.rt.Begin(a, req)
		if err != nil {
			if before == Execute {
				rt.Fatalf("refused at execute: %v", err)
			}
			return
		}
		for i, n := 0, rapid.IntRange(0, 3).Draw(rt, "steps"); i < n; i++ {
			switch rapid.IntRange(0, 2).Draw(rt, "step") {
			case 0:
				_ = f.rt.Reduce(a, rapid.SampledFrom([]string{"shell", "*", "read_file"}).Draw(rt, "pat"),
					Level(rapid.IntRange(0, 4).Draw(rt, "lvl")), "")
			case 1:
				f.rt.SetOverrides(Overrides{Revoked: []string{"shell"}}, "op")
			case 2:
				f.rt.SetOverrides(Overrides{}, "op")
			}
		}
		at := propLevel(f, a, req)
		revoked := f.rt.global.Load().isRevoked("shell")
		err = f.rt.Confirm(a, c.ID, "op")
		if after := propLevel(f, a, req); after > at {
			rt.Fatalf("the level rose from %s to %s at the confirmation", at, after)
		}
		if err == nil && (at < Execute || revoked) {
			rt.Fatalf("confirmed a call at %s (revoked %v)", at, revoked)
		}
		if err != nil && at == Execute && !revoked {
			rt.Fatalf("refused a confirmation at execute: %v", err)
		}
	})
}

// Property: a replacement (Replace or Supersede) never holds more of any
// capability than its predecessor's reduced ceiling.
func TestPropertyAReplacementNeverHoldsMoreThanItsPredecessorsReducedCeiling(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		f := newFixture(rt)
		full := []Grant{{Level: Execute, Capability: "*"}}
		a := f.start(rt, "a", full)
		r := f.next(rt)
		supersede := rapid.Bool().Draw(rt, "supersede")
		pred := a
		if !supersede {
			// a blocked follow-up is the predecessor Replace acts on
			b, err := f.rt.FollowUp(testSession, Request{Text: "b", Grants: full, RequiresSuccess: true})
			if err != nil {
				rt.Fatal(err)
			}
			pred = b.ID
		}
		pats := []string{"shell", "write_*", "*", "read_file", "search"}
		for i, n := 0, rapid.IntRange(0, 4).Draw(rt, "reductions"); i < n; i++ {
			_ = f.rt.Reduce(pred, rapid.SampledFrom(pats).Draw(rt, "pat"), Level(rapid.IntRange(0, 4).Draw(rt, "lvl")), "")
		}
		var next string
		if supersede {
			v, err := f.rt.Supersede(testSession, Request{Text: "c", Grants: full})
			if err != nil {
				rt.Fatal(err)
			}
			next = v.ID
			if rapid.Bool().Draw(rt, "late") {
				_ = f.rt.Reduce(pred, rapid.SampledFrom(pats).Draw(rt, "late_pat"), Level(rapid.IntRange(0, 4).Draw(rt, "late_lvl")), "")
			}
			if err := r.Finish(StatusFailed, ""); err != nil {
				rt.Fatal(err)
			}
		} else {
			if err := r.Finish(StatusFailed, ""); err != nil {
				rt.Fatal(err)
			}
			v, err := f.rt.Replace(pred, "c")
			if err != nil {
				rt.Fatal(err)
			}
			next = v.ID
		}
		pg, err := f.rt.Grants(pred)
		if err != nil {
			rt.Fatal(err)
		}
		ng, err := f.rt.Grants(next)
		if err != nil {
			rt.Fatal(err)
		}
		held := map[string]Level{}
		for _, h := range pg.Ceiling {
			held[h.Capability], _ = ParseLevel(h.Level)
		}
		for _, h := range ng.Ceiling {
			l, _ := ParseLevel(h.Level)
			if l > held[h.Capability] {
				rt.Fatalf("%s: the replacement holds %s, its predecessor %s", h.Capability, l, held[h.Capability])
			}
		}
	})
}
