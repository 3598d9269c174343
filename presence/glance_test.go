package presence

// One test per rule of "truth at a glance": what a roster needs to answer
// "which agent needs me, right now?" honestly.

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"
)

// A keyless input request (Gemini's ToolPermission without a tool in its
// details, Claude Code's Elicitation, a Notification-only prompt) is never
// cleared by a tool finishing: only progress evidence or a stop ends it.
func TestKeylessRequestNotClearedByPostToolUse(t *testing.T) {
	keyless := []Event{ev(1, TypeUserPromptSubmit), ev(2, TypeToolPreUse, AttrTool, "ask"), ev(3, TypeInputRequested)}
	post := []Event{
		ev(4, TypeToolPostUse, AttrTool, "Read"),
		ev(4, TypeInputResolved, AttrTool, "Read", AttrRequestKey, "k-read"),
		ev(5, TypeToolPostUse, AttrTool, "Bash"),
		ev(5, TypeInputResolved, AttrTool, "Bash", AttrRequestKey, "k-bash"),
	}
	for i := range post {
		post[i].ID = post[i].ID + string(rune('a'+i))
	}
	waiting := fold(append(slices.Clone(keyless), post...)...)
	wantActivity(t, waiting, ActivityNeedsInput)
	if waiting.WaitingOn != WaitingQuestion || !waiting.ActivityUpdatedAt.Equal(ev(3, "").TS) {
		t.Fatalf("waiting on %q since %v", waiting.WaitingOn, waiting.ActivityUpdatedAt)
	}

	for _, c := range []struct {
		name string
		e    Event
		want Activity
	}{
		{"a prompt", ev(10, TypeUserPromptSubmit), ActivityWorking},
		{"a pre-use", ev(10, TypeToolPreUse, AttrTool, "Bash"), ActivityWorking},
		{"a command inside the turn", ev(10, TypeCommandStart), ActivityWorking},
		{"a stop", ev(10, TypeTurnStop), ActivityIdle},
		{"the session's end", ev(10, TypeSessionEnd), ActivityIdle},
		{"an answer that names nothing", ev(10, TypeInputResolved), ActivityWorking},
		{"another tool's resolution", ev(10, TypeInputResolved, AttrRequestKey, "k-other"), ActivityNeedsInput},
		{"narration", ev(10, TypeNarration), ActivityNeedsInput},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := fold(append(append(slices.Clone(keyless), post...), c.e)...)
			wantActivity(t, s, c.want)
		})
	}

	// Claude Code's permission_prompt Notification after a PermissionRequest
	// is the same prompt: the tool finishing answers both.
	s := fold(ev(1, TypeUserPromptSubmit), ev(2, TypeInputRequested, AttrRequestKey, "k1", AttrTool, "Bash"),
		ev(3, TypeInputRequested), ev(4, TypeInputResolved, AttrRequestKey, "k1"))
	wantActivity(t, s, ActivityWorking)
	// And the other way round: a keyed request names the keyless prompt
	// already recorded.
	s = fold(ev(1, TypeUserPromptSubmit), ev(2, TypeInputRequested), ev(3, TypeInputRequested, AttrRequestKey, "k1", AttrTool, "Bash"))
	if s.WaitingOn != "Bash" || !slices.Equal(s.PendingRequests, []string{"k1"}) {
		t.Fatalf("waiting on %q, pending %q", s.WaitingOn, s.PendingRequests)
	}
	wantActivity(t, fold(ev(1, TypeUserPromptSubmit), ev(2, TypeInputRequested), ev(3, TypeInputRequested, AttrRequestKey, "k1"),
		ev(4, TypeInputResolved, AttrRequestKey, "k1")), ActivityWorking)
}

// The fold refuses exactly what Declare refuses: one rule set.
func TestFoldRefusesWhatDeclareRefuses(t *testing.T) {
	withTask := []Event{ev(1, TypeSessionStart), ev(2, TypeTaskSet, AttrTask, "fix the tests")}
	cases := []struct {
		name   string
		before []Event
		to     TaskState
		reason string
		err    error
	}{
		{"blocked with a reason", withTask, TaskBlocked, "waiting for access", nil},
		{"blocked without a reason", withTask, TaskBlocked, "", ErrReasonRequired},
		{"blocked with a blank reason", withTask, TaskBlocked, " \t\n", ErrReasonRequired},
		{"done with a task", withTask, TaskDone, "", nil},
		{"done without a task", seq(TypeSessionStart), TaskDone, "all good", ErrNoTask},
		{"done with a blank task", []Event{ev(1, TypeSessionStart), ev(2, TypeTaskSet, AttrTask, "   ")}, TaskDone, "", ErrNoTask},
		{"done after the task was cleared", append(slices.Clone(withTask), ev(3, TypeTaskSet, AttrTask, "")), TaskDone, "", ErrNoTask},
		{"a subagent", []Event{sub(ev(1, TypeSubagentStart)), sub(ev(2, TypeTaskSet, AttrTask, "t"))}, TaskBlocked, "r", ErrSubagent},
		{"an unknown state", withTask, TaskState("paused"), "", ErrUnknownState},
		{"active with a reason", withTask, TaskActive, "resumed", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := fold(c.before...)
			_, err := Declare(&before, c.to, c.reason)
			if !errors.Is(err, c.err) {
				t.Fatalf("Declare: %v, want %v", err, c.err)
			}
			e := ev(9, TypeTaskState, AttrTaskState, string(c.to))
			if c.reason != "" {
				e.SetAttr(AttrReason, c.reason)
			}
			if c.before[0].ParentSessionID != "" {
				e = sub(e)
			}
			after := fold(append(slices.Clone(c.before), e)...)
			applied := after.TaskStateDeclared && after.TaskStateUpdatedAt.Equal(e.TS)
			if applied != (err == nil) {
				t.Fatalf("fold applied=%v, Declare err=%v: %+v", applied, err, after)
			}
		})
	}
}

// activity_updated_at is when activity took its current value; repeated
// evidence moves only last_evidence_at; task.set moves neither.
func TestSinceMeansSince(t *testing.T) {
	at := func(i int) time.Time { return ev(i, "").TS }
	cases := []struct {
		name           string
		evs            []Event
		since, lastEvd time.Time
		source         string
	}{
		{"a Notification after a PermissionRequest",
			[]Event{ev(1, TypeUserPromptSubmit), ev(2, TypeInputRequested, AttrRequestKey, "k1", AttrTool, "Bash"), ev(3, TypeInputRequested, "notification_type", "permission_prompt")},
			at(2), at(3), TypeInputRequested},
		{"more tool calls while working",
			[]Event{ev(1, TypeUserPromptSubmit), ev(2, TypeToolPreUse), ev(3, TypeToolPostUse), ev(4, TypeToolPreUse), ev(5, TypeCommandStart)},
			at(1), at(5), TypeUserPromptSubmit},
		{"set-task is not agent activity",
			[]Event{ev(1, TypeUserPromptSubmit), ev(2, TypeToolPreUse), ev(3, TypeTaskSet, AttrTask, "t")},
			at(1), at(2), TypeUserPromptSubmit},
		{"claims, lifecycle and names are not agent activity",
			[]Event{ev(1, TypeSessionStart), ev(2, TypeTaskSet, AttrTask, "t"), ev(3, TypeClaimWrite, AttrPaths, []string{"a"}),
				taskState(4, TaskBlocked, "r"), ev(5, TypeSessionNameSeen, AttrName, "x"), ev(6, TypeCoordination)},
			at(1), at(1), TypeSessionStart},
		{"a new value moves both",
			[]Event{ev(1, TypeUserPromptSubmit), ev(2, TypeToolPreUse), ev(3, TypeTurnStop)},
			at(3), at(3), TypeTurnStop},
		{"an end after a stop is still idle since the stop",
			[]Event{ev(1, TypeUserPromptSubmit), ev(2, TypeTurnStop), ev(3, TypeSessionEnd)},
			at(2), at(3), TypeTurnStop},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := fold(c.evs...)
			if !s.ActivityUpdatedAt.Equal(c.since) || !s.LastEvidenceAt.Equal(c.lastEvd) || s.ActivitySource != c.source {
				t.Fatalf("since %v (want %v), last evidence %v (want %v), source %q (want %q)",
					s.ActivityUpdatedAt, c.since, s.LastEvidenceAt, c.lastEvd, s.ActivitySource, c.source)
			}
			// The heartbeat keeps both, in the canonical form.
			b, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			if m["last_evidence_at"] != FormatTime(c.lastEvd) || m["activity_updated_at"] != FormatTime(c.since) {
				t.Fatalf("json %s", b)
			}
			var r State
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(r, s) {
				t.Fatalf("heartbeat round trip\n%+v\n%+v", r, s)
			}
		})
	}
}

// A needs_input session says what it waits on; it forgets it when the wait
// ends.
func TestWaitingOnNamesTheRequest(t *testing.T) {
	req := func(kv ...any) []Event {
		return []Event{ev(1, TypeUserPromptSubmit), ev(2, TypeInputRequested, kv...)}
	}
	cases := []struct {
		name string
		evs  []Event
		want string
	}{
		{"a summary", req(AttrTool, "Edit", AttrSummary, "Edit src/app.go", AttrRequestKey, "k"), "Edit src/app.go"},
		{"a tool only", req(AttrTool, "Bash", AttrRequestKey, "k"), "Bash"},
		{"an elicitation", req(), WaitingQuestion},
		{"the first request while a second arrives", append(req(AttrSummary, "Bash: git", AttrRequestKey, "k1"),
			ev(3, TypeInputRequested, AttrSummary, "Edit a.go", AttrRequestKey, "k2")), "Edit a.go"},
		{"a notification of the same prompt keeps the tool", append(req(AttrSummary, "Bash: git", AttrRequestKey, "k1"),
			ev(3, TypeInputRequested)), "Bash: git"},
		{"answered", append(req(AttrSummary, "Bash: git", AttrRequestKey, "k1"), ev(3, TypeInputResolved, AttrRequestKey, "k1")), ""},
		{"stopped", append(req(AttrSummary, "Bash: git", AttrRequestKey, "k1"), ev(3, TypeTurnStop)), ""},
		{"a long summary is bounded", req(AttrSummary, string(make([]byte, 4*MaxWaitingOnChars))), string(make([]byte, MaxWaitingOnChars))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := fold(c.evs...)
			if s.WaitingOn != c.want {
				t.Fatalf("waiting on %q, want %q", s.WaitingOn, c.want)
			}
			if (s.Activity == ActivityNeedsInput) != (c.want != "") {
				t.Fatalf("activity %s with waiting_on %q", s.Activity, s.WaitingOn)
			}
			b, _ := json.Marshal(s)
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			if got, _ := m["waiting_on"].(string); got != c.want {
				t.Fatalf("json waiting_on %q", got)
			}
		})
	}
}

// The roster says where a session runs: the repository (or the cwd's base
// name) and the branch.
func TestWhereItRuns(t *testing.T) {
	cases := []struct {
		name                  string
		evs                   []Event
		project, branch, repo string
	}{
		{"repo and branch", []Event{ev(1, TypeSessionStart, AttrCwd, "/home/ana/shop/cart", AttrRepo, "shop", AttrBranch, "main")}, "shop", "main", "shop"},
		{"the latest prompt wins", []Event{ev(1, TypeSessionStart, AttrRepo, "shop", AttrBranch, "main"),
			ev(2, TypeUserPromptSubmit, AttrRepo, "shop", AttrBranch, "fix-rounding")}, "shop", "fix-rounding", "shop"},
		{"no repository: the cwd's name", []Event{ev(1, TypeSessionStart, AttrCwd, "/tmp/scratch/")}, "scratch", "", ""},
		{"a Windows cwd", []Event{ev(1, TypeSessionStart, AttrCwd, `C:\Users\ana\shop`)}, "shop", "", ""},
		{"nothing known", seq(TypeSessionStart), "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := fold(c.evs...)
			if s.Project() != c.project || s.Branch != c.branch || s.Repo != c.repo {
				t.Fatalf("project %q branch %q repo %q", s.Project(), s.Branch, s.Repo)
			}
			b, _ := json.Marshal(s)
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			p, _ := m["project"].(string)
			br, _ := m["branch"].(string)
			if p != c.project || br != c.branch {
				t.Fatalf("json %s", b)
			}
			var r State
			if err := json.Unmarshal(b, &r); err != nil || !reflect.DeepEqual(r, s) {
				t.Fatalf("round trip %v\n%+v\n%+v", err, r, s)
			}
		})
	}
	a := fold(ev(1, TypeSessionStart, AttrRepo, "shop", AttrBranch, "main"))
	b := fold(ev(1, TypeSessionStart, AttrRepo, "shop", AttrBranch, "fix"))
	if PresenceHash(&a) == PresenceHash(&b) {
		t.Fatal("a branch change does not reach other machines")
	}
}

// A working session without evidence for longer than the threshold is
// silent since its last evidence; nothing else ever is.
func TestSilenceIsHonest(t *testing.T) {
	working := fold(ev(1, TypeUserPromptSubmit), ev(2, TypeToolPreUse), ev(3, TypeToolPostUse))
	last := ev(3, "").TS
	cases := []struct {
		name string
		s    State
		now  time.Time
		want time.Time
	}{
		{"working, quiet past the threshold", working, last.Add(7 * time.Minute), last},
		{"working, quiet exactly the threshold", working, last.Add(5 * time.Minute), time.Time{}},
		{"working, recent evidence", working, last.Add(time.Minute), time.Time{}},
		{"waiting for input", fold(ev(1, TypeUserPromptSubmit), ev(2, TypeInputRequested)), last.Add(time.Hour), time.Time{}},
		{"idle", fold(ev(1, TypeUserPromptSubmit), ev(2, TypeTurnStop)), last.Add(time.Hour), time.Time{}},
		{"unknown", fold(ev(1, TypeNarration)), last.Add(time.Hour), time.Time{}},
		{"an older heartbeat without last evidence", func() State {
			s := working
			s.LastEvidenceAt = time.Time{}
			return s
		}(), last.Add(time.Hour), ev(1, "").TS},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			keep := c.s
			got := SilentSince(&c.s, c.now, 5*time.Minute)
			if !got.Equal(c.want) {
				t.Fatalf("silent since %v, want %v", got, c.want)
			}
			if !reflect.DeepEqual(c.s, keep) {
				t.Fatal("SilentSince changed the state")
			}
		})
	}
	s := working
	s.SilentSince = SilentSince(&s, last.Add(7*time.Minute), 5*time.Minute)
	b, _ := json.Marshal(s)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	if m["silent_since"] != FormatTime(last) || m["activity"] != "working" {
		t.Fatalf("json %s", b)
	}
	b, _ = json.Marshal(working)
	m = nil
	_ = json.Unmarshal(b, &m)
	if _, ok := m["silent_since"]; ok {
		t.Fatalf("silent_since present on a fold: %s", b)
	}
}

// roster builds states for SurfaceChildren tests.
func rosterState(id, parent, name string, a Activity, since int, waitingOn string) State {
	s := NewState(id)
	s.ParentSessionID, s.Name, s.Activity = parent, name, a
	s.ActivityUpdatedAt = t0.Add(time.Duration(since) * time.Second)
	s.WaitingOn = waitingOn
	return s
}

// A subagent's input request surfaces on its top-level session; the child
// row stays as it is.
func TestSubagentInputSurfacesOnParent(t *testing.T) {
	parent := rosterState("p", "", "Sable", ActivityWorking, 1, "")
	child := rosterState("c", "p", "Flint", ActivityNeedsInput, 5, "Bash")
	t.Run("child", func(t *testing.T) {
		states := []State{child, parent}
		SurfaceChildren(states)
		p := states[1]
		if p.Activity != ActivityNeedsInput || p.WaitingChild != "c" || p.WaitingOn != "subagent Flint: Bash" || !p.ActivityUpdatedAt.Equal(child.ActivityUpdatedAt) {
			t.Fatalf("parent %+v", p)
		}
		if !reflect.DeepEqual(states[0], child) {
			t.Fatalf("child changed: %+v", states[0])
		}
		b, _ := json.Marshal(p)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		if m["waiting_child"] != "c" || m["waiting_on"] != "subagent Flint: Bash" {
			t.Fatalf("json %s", b)
		}
	})
	t.Run("grandchild surfaces to the top", func(t *testing.T) {
		mid := rosterState("m", "p", "Mica", ActivityWorking, 2, "")
		grand := rosterState("g", "m", "", ActivityNeedsInput, 7, "question")
		states := []State{grand, mid, parent}
		SurfaceChildren(states)
		if states[1].Activity != ActivityWorking || !reflect.DeepEqual(states[0], grand) {
			t.Fatal("a subagent row changed")
		}
		if states[2].WaitingChild != "g" || states[2].WaitingOn != "subagent g: question" {
			t.Fatalf("top %+v", states[2])
		}
	})
	t.Run("the longest wait is named", func(t *testing.T) {
		late := rosterState("c2", "p", "Zinc", ActivityNeedsInput, 9, "Edit a.go")
		states := []State{parent, late, child}
		SurfaceChildren(states)
		if states[0].WaitingChild != "c" {
			t.Fatalf("names %q", states[0].WaitingChild)
		}
	})
	t.Run("the parent's own request stays", func(t *testing.T) {
		own := rosterState("p", "", "Sable", ActivityNeedsInput, 3, "Edit b.go")
		states := []State{own, child}
		SurfaceChildren(states)
		if !reflect.DeepEqual(states[0], own) {
			t.Fatalf("parent %+v", states[0])
		}
	})
	t.Run("no parent in the roster, an ended parent, a loop", func(t *testing.T) {
		ended := parent
		ended.Ended, ended.Activity = true, ActivityIdle
		loopA := rosterState("a", "b", "", ActivityNeedsInput, 1, "")
		loopB := rosterState("b", "a", "", ActivityNeedsInput, 1, "")
		states := []State{child, ended, loopA, loopB, rosterState("orphan", "gone", "", ActivityNeedsInput, 1, "")}
		keep := slices.Clone(states)
		SurfaceChildren(states)
		if !reflect.DeepEqual(states, keep) {
			t.Fatalf("changed %+v", states)
		}
	})
}

// The agent showing the suggested name ends the re-mint; a peer's name, or
// an older name of its own, does not.
func TestNameSeenEndsRemint(t *testing.T) {
	base := []Event{ev(1, TypeSessionStart, AttrSessionName, "Flint"), ev(2, TypeTaskSet, AttrTask, "fix tests")}
	d, err := Declare(func() *State { s := fold(base...); return &s }(), TaskBlocked, "waiting for access")
	if err != nil {
		t.Fatal(err)
	}
	lc := ev(3, TypeTaskState)
	for k, v := range d.Attrs {
		lc.SetAttr(k, v)
	}
	evs := append(slices.Clone(base), lc)
	s := fold(evs...)
	if !s.NamePending() || s.SuggestedSessionName != "[BLOCKED] - Agent Flint - fix tests" {
		t.Fatalf("pending %v, suggested %q", s.NamePending(), s.SuggestedSessionName)
	}
	for _, other := range []string{"Agent Flint - fix tests", "[BLOCKED] - Agent Sable - other", ""} {
		if s := fold(append(slices.Clone(evs), ev(4, TypeSessionNameSeen, AttrName, other))...); !s.NamePending() || s.SessionNameSeenFor != "" {
			t.Fatalf("seen %q ended the re-mint: %+v", other, s)
		}
	}
	seen := append(slices.Clone(evs), ev(4, TypeSessionNameSeen, AttrName, "[BLOCKED] - Agent Flint - fix tests"))
	s = fold(seen...)
	if s.NamePending() || s.SessionNameSeenFor != s.SuggestedSessionName {
		t.Fatalf("pending after the name was shown: %+v", s)
	}
	b, _ := json.Marshal(s)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	if m["session_name_seen_for"] != "[BLOCKED] - Agent Flint - fix tests" {
		t.Fatalf("json %s", b)
	}
	// A later re-mint is pending again until shown.
	s = fold(append(seen, taskState(5, TaskActive, "access granted"))...)
	if s.NamePending() {
		t.Fatal("a lifecycle event without a suggested name made a name pending")
	}
	again := taskState(5, TaskActive, "access granted")
	again.SetAttr(AttrSuggestedName, "Agent Flint - fix tests")
	if s = fold(append(seen, again)...); !s.NamePending() {
		t.Fatal("a new re-mint is not pending")
	}
	// The first name, before any lifecycle event, counts as seen too.
	if s = fold(append(slices.Clone(base), ev(3, TypeSessionNameSeen, AttrName, "Agent Flint - fix tests"))...); s.SessionNameSeenFor != "Agent Flint - fix tests" || s.NamePending() {
		t.Fatalf("first name: %+v", s)
	}
}

func TestShownNames(t *testing.T) {
	cases := []struct {
		name, text string
		want       []string
	}{
		{"plain line", "Agent Flint - fix the tests", []string{"Agent Flint - fix the tests"}},
		{"blocked, in a sentence's line", "Session: [BLOCKED] - Agent Flint - fix the tests\nmore",
			[]string{"[BLOCKED] - Agent Flint - fix the tests"}},
		{"done without a task", "Renamed to [DONE] - Agent Flint.", []string{"[DONE] - Agent Flint"}},
		{"bold", "Name: **Agent Flint - fix the tests**", []string{"Agent Flint - fix the tests**", "Agent Flint - fix the tests"}},
		{"quoted then prose", `I am "Agent Flint - fix tests" today`,
			[]string{`Agent Flint - fix tests" today`, "Agent Flint - fix tests"}},
		{"no name", "Agent - fix tests", []string{"Agent - fix tests"}},
		{"several", "Agent A - x\nAgent B - y", []string{"Agent A - x", "Agent B - y"}},
		{"not a projection", "The Agent said hi - twice\nSubAgent Flint - x\nAgent Flint", nil},
		{"carriage returns", "Agent Flint - t\r\n", []string{"Agent Flint - t"}},
		{"empty", "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ShownNames(c.text); !slices.Equal(got, c.want) {
				t.Fatalf("ShownNames(%q) = %q, want %q", c.text, got, c.want)
			}
		})
	}
	// Bounded: many names, and a name too long to be one.
	var many []byte
	for i := 0; i < 100; i++ {
		many = append(many, []byte("Agent N"+string(rune('a'+i%26))+string(rune('a'+i/26))+" - t\n")...)
	}
	if got := ShownNames(string(many)); len(got) != MaxShownNames {
		t.Fatalf("%d names", len(got))
	}
	long := "Agent Flint - " + string(make([]byte, 3*MaxShownNameBytes))
	for _, n := range ShownNames(long) {
		if len(n) > MaxShownNameBytes {
			t.Fatalf("a %d-byte name", len(n))
		}
	}
}
