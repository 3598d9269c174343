package presence

// One test per rule of the session-state seed (seeds/004) and of docs/design.md's
// "Canonical events", named after the rule.

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// noiseTypes change no activity and never clear needs_input.
var noiseTypes = []string{TypeToolPostUse, TypeOutputChunk, TypeNarration, TypeCoordination, "vendor.unknown_thing"}

func TestActivityAndTaskStateAreIndependent(t *testing.T) {
	// Waiting for approval while the task is active.
	s := fold(ev(1, TypeUserPromptSubmit), ev(2, TypeInputRequested))
	wantActivity(t, s, ActivityNeedsInput)
	wantTaskState(t, s, TaskActive)

	// After the turn ends: idle, task still active.
	s = fold(ev(1, TypeUserPromptSubmit), ev(2, TypeInputRequested), ev(3, TypeTurnStop))
	wantActivity(t, s, ActivityIdle)
	wantTaskState(t, s, TaskActive)

	// A lifecycle change moves no activity ...
	for _, a := range []string{TypeSessionStart, TypeUserPromptSubmit, TypeInputRequested, TypeTurnStop} {
		before := fold(ev(1, a))
		after := fold(ev(1, a), taskState(2, TaskBlocked, "waiting for repository access"))
		if after.Activity != before.Activity || !after.ActivityUpdatedAt.Equal(before.ActivityUpdatedAt) || after.ActivitySource != before.ActivitySource {
			t.Fatalf("after %s, a lifecycle event moved activity from %q to %q", a, before.Activity, after.Activity)
		}
		wantTaskState(t, after, TaskBlocked)
	}
	// ... and no activity event moves the lifecycle.
	evs := []Event{taskState(1, TaskBlocked, "waiting for repository access")}
	for i, typ := range []string{TypeSessionStart, TypeUserPromptSubmit, TypeToolPreUse, TypeCommandStart,
		TypeInputRequested, TypeInputResolved, TypeTurnStop, TypeSubagentStart, TypeSessionEnd} {
		evs = append(evs, ev(i+2, typ))
		s := fold(evs...)
		wantTaskState(t, s, TaskBlocked)
		if s.BlockerReason != "waiting for repository access" {
			t.Fatalf("after %s blocker reason = %q", typ, s.BlockerReason)
		}
	}
}

func TestSessionStartIsIdle(t *testing.T) {
	s := fold(ev(1, TypeSessionStart))
	wantActivity(t, s, ActivityIdle)
	if s.ActivitySource != TypeSessionStart || !s.ActivityUpdatedAt.Equal(ev(1, "").TS) {
		t.Fatalf("activity source %q at %v", s.ActivitySource, s.ActivityUpdatedAt)
	}
	// No open turn is implied: a command that follows changes nothing.
	s = fold(ev(1, TypeSessionStart), ev(2, TypeCommandStart))
	wantActivity(t, s, ActivityIdle)
	// A (re)start after work is idle too.
	s = fold(ev(1, TypeUserPromptSubmit), ev(2, TypeSessionStart))
	wantActivity(t, s, ActivityIdle)
}

func TestSubagentStartIsIdle(t *testing.T) {
	s := fold(sub(ev(1, TypeSubagentStart)))
	wantActivity(t, s, ActivityIdle)
	if !s.IsSubagent() {
		t.Fatal("a subagent's session has no parent")
	}
	s = fold(sub(ev(1, TypeSubagentStart)), sub(ev(2, TypeCommandStart)))
	wantActivity(t, s, ActivityIdle)
}

func TestPromptSubmitIsWorking(t *testing.T) {
	for _, before := range [][]Event{nil, seq(TypeSessionStart), seq(TypeUserPromptSubmit, TypeInputRequested), seq(TypeUserPromptSubmit, TypeTurnStop)} {
		s := fold(append(before, ev(10, TypeUserPromptSubmit))...)
		wantActivity(t, s, ActivityWorking)
		if !s.OpenTurn {
			t.Fatal("a prompt opens a turn")
		}
	}
}

func TestToolPreUseIsWorking(t *testing.T) {
	for _, before := range [][]Event{nil, seq(TypeSessionStart), seq(TypeUserPromptSubmit, TypeInputRequested), seq(TypeTurnStop)} {
		s := fold(append(before, ev(10, TypeToolPreUse, AttrTool, "Bash"))...)
		wantActivity(t, s, ActivityWorking)
		if s.ActivitySource != TypeToolPreUse {
			t.Fatalf("source %q", s.ActivitySource)
		}
	}
	// It evidences an open turn, so a command that follows applies.
	s := fold(ev(1, TypeSessionStart), ev(2, TypeToolPreUse), ev(3, TypeInputRequested), ev(4, TypeCommandStart))
	wantActivity(t, s, ActivityWorking)
}

func TestCommandStartOnlyDuringOpenTurn(t *testing.T) {
	cases := []struct {
		name   string
		before []Event
		want   Activity
	}{
		{"at start", nil, ActivityUnknown},
		{"after session.start", seq(TypeSessionStart), ActivityIdle},
		{"after turn.stop", seq(TypeUserPromptSubmit, TypeTurnStop), ActivityIdle},
		{"after session.end", seq(TypeUserPromptSubmit, TypeSessionEnd), ActivityIdle},
		{"after subagent.stop", seq(TypeToolPreUse, TypeSubagentStop), ActivityIdle},
		{"during a prompted turn", seq(TypeUserPromptSubmit, TypeToolPostUse), ActivityWorking},
		{"while waiting in an open turn", seq(TypeUserPromptSubmit, TypeInputRequested), ActivityWorking},
		{"after a tool in an open turn", seq(TypeSessionStart, TypeToolPreUse), ActivityWorking},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prev := fold(c.before...)
			s := fold(append(c.before, ev(10, TypeCommandStart))...)
			wantActivity(t, s, c.want)
			// Working already: the command is more evidence of the same
			// value and moves only last_evidence_at.
			if c.want == ActivityWorking && prev.Activity != ActivityWorking && s.ActivitySource != TypeCommandStart {
				t.Fatalf("source %q", s.ActivitySource)
			}
			if c.want == ActivityWorking && prev.Activity == ActivityWorking &&
				(s.ActivitySource != prev.ActivitySource || !s.ActivityUpdatedAt.Equal(prev.ActivityUpdatedAt)) {
				t.Fatalf("repeated working moved activity to %s from %q", s.ActivityUpdatedAt, s.ActivitySource)
			}
		})
	}
}

func TestInputRequestedIsNeedsInput(t *testing.T) {
	for _, before := range [][]Event{nil, seq(TypeSessionStart), seq(TypeUserPromptSubmit), seq(TypeUserPromptSubmit, TypeTurnStop)} {
		s := fold(append(before, ev(10, TypeInputRequested, AttrRequestKey, "perm-1"))...)
		wantActivity(t, s, ActivityNeedsInput)
		if s.ActivitySource != TypeInputRequested || !s.ActivityUpdatedAt.Equal(ev(10, "").TS) {
			t.Fatalf("source %q at %v", s.ActivitySource, s.ActivityUpdatedAt)
		}
	}
	// A nearby pre-execution event is not approval evidence.
	s := fold(ev(1, TypeUserPromptSubmit), ev(2, TypeToolPreUse, AttrTool, "Bash"))
	wantActivity(t, s, ActivityWorking)
}

func TestTurnStopIsIdle(t *testing.T) {
	s := fold(ev(1, TypeUserPromptSubmit), ev(2, TypeToolPreUse), ev(3, TypeTurnStop))
	wantActivity(t, s, ActivityIdle)
	if s.OpenTurn || s.Ended {
		t.Fatalf("open turn %v, ended %v", s.OpenTurn, s.Ended)
	}
}

func TestSessionEndIsIdle(t *testing.T) {
	s := fold(ev(1, TypeUserPromptSubmit), ev(2, TypeSessionEnd, AttrReason, "exit"))
	wantActivity(t, s, ActivityIdle)
	if !s.Ended || !s.EndedAt.Equal(ev(2, "").TS) || s.EndReason != "exit" || s.Live() {
		t.Fatalf("ended %v at %v for %q", s.Ended, s.EndedAt, s.EndReason)
	}
	// A resumed session is live again.
	s = fold(ev(1, TypeUserPromptSubmit), ev(2, TypeSessionEnd), ev(3, TypeSessionStart))
	if s.Ended || !s.Live() {
		t.Fatal("a session that started again is still ended")
	}
}

func TestSubagentStopIsIdle(t *testing.T) {
	s := fold(sub(ev(1, TypeSubagentStart)), sub(ev(2, TypeToolPreUse)), sub(ev(3, TypeSubagentStop)))
	wantActivity(t, s, ActivityIdle)
	if !s.Ended {
		t.Fatal("a stopped subagent is not ended")
	}
}

func TestNoiseDoesNotClearNeedsInput(t *testing.T) {
	base := []Event{ev(1, TypeUserPromptSubmit), ev(2, TypeInputRequested, AttrRequestKey, "perm-1")}
	want := fold(base...)
	wantActivity(t, want, ActivityNeedsInput)
	check := func(t *testing.T, s State) {
		t.Helper()
		wantActivity(t, s, ActivityNeedsInput)
		if !s.ActivityUpdatedAt.Equal(want.ActivityUpdatedAt) || s.ActivitySource != want.ActivitySource || !slices.Equal(s.PendingRequests, want.PendingRequests) {
			t.Fatalf("activity moved: %v from %q pending %q", s.ActivityUpdatedAt, s.ActivitySource, s.PendingRequests)
		}
	}
	others := map[string][]any{
		TypeTaskSet:    {AttrTask, "a task"},
		TypeClaimWrite: {AttrPaths, []string{"a.go"}},
		TypeTaskState:  {AttrTaskState, "blocked", AttrReason, "waiting"},
	}
	types := append(append([]string{}, noiseTypes...), TypeTaskSet, TypeClaimWrite, TypeTaskState)
	for _, typ := range types {
		t.Run(typ, func(t *testing.T) {
			check(t, fold(append(base, ev(3, typ, others[typ]...))...))
			// Many of them, hours later.
			evs := append([]Event{}, base...)
			for i := 3; i < 50; i++ {
				evs = append(evs, ev(i*600, typ, others[typ]...))
			}
			check(t, fold(evs...))
		})
	}
	t.Run("elapsed time", func(t *testing.T) {
		// The fold reads no clock (TestPresenceReadsNoClock); a reader
		// asking a day later finds a waiting session still waiting, and
		// never silent: silence is a working session's.
		s := fold(base...)
		check(t, s)
		if got := SilentSince(&s, s.ActivityUpdatedAt.Add(24*time.Hour), time.Minute); !got.IsZero() {
			t.Fatalf("a waiting session is silent since %v", got)
		}
		// A persisted heartbeat read much later says the same.
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var r State
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		check(t, r)
	})
	t.Run("an unrelated resolution", func(t *testing.T) {
		check(t, fold(append(base, ev(3, TypeInputResolved, AttrRequestKey, "perm-2"))...))
	})
}

func TestProgressEvidenceClearsNeedsInput(t *testing.T) {
	base := []Event{ev(1, TypeUserPromptSubmit), ev(2, TypeInputRequested, AttrRequestKey, "perm-1")}
	for _, e := range []Event{
		ev(3, TypeUserPromptSubmit),
		ev(3, TypeToolPreUse, AttrTool, "Bash"),
		ev(3, TypeCommandStart),
		ev(3, TypeInputResolved, AttrRequestKey, "perm-1"),
		ev(3, TypeInputResolved),
	} {
		t.Run(e.Type, func(t *testing.T) {
			s := fold(append(base, e)...)
			wantActivity(t, s, ActivityWorking)
			if s.ActivitySource != e.Type || len(s.PendingRequests) != 0 {
				t.Fatalf("source %q, pending %q", s.ActivitySource, s.PendingRequests)
			}
		})
	}
}

func TestStopClearsNeedsInput(t *testing.T) {
	for _, typ := range []string{TypeTurnStop, TypeSessionEnd, TypeSubagentStop} {
		t.Run(typ, func(t *testing.T) {
			s := fold(ev(1, TypeUserPromptSubmit), ev(2, TypeInputRequested, AttrRequestKey, "perm-1"), ev(3, typ))
			wantActivity(t, s, ActivityIdle)
			if len(s.PendingRequests) != 0 {
				t.Fatalf("pending %q survives a stop", s.PendingRequests)
			}
		})
	}
}

func TestInputResolvedClearsMatchingRequestOnly(t *testing.T) {
	base := []Event{ev(1, TypeUserPromptSubmit), ev(2, TypeInputRequested, AttrRequestKey, "perm-1")}
	s := fold(append(base, ev(3, TypeInputResolved, AttrRequestKey, "perm-2"))...)
	wantActivity(t, s, ActivityNeedsInput)
	s = fold(append(base, ev(3, TypeInputResolved, AttrRequestKey, "perm-2"), ev(4, TypeInputResolved, AttrRequestKey, "perm-1"))...)
	wantActivity(t, s, ActivityWorking)
	// A resolution with no key cannot be told apart; it counts.
	s = fold(append(base, ev(3, TypeInputResolved))...)
	wantActivity(t, s, ActivityWorking)
	// A request without a key is not answered by a keyed resolution (an
	// unrelated tool finishing); a keyless answer counts.
	s = fold(ev(1, TypeUserPromptSubmit), ev(2, TypeInputRequested), ev(3, TypeInputResolved, AttrRequestKey, "perm-9"))
	wantActivity(t, s, ActivityNeedsInput)
	s = fold(ev(1, TypeUserPromptSubmit), ev(2, TypeInputRequested), ev(3, TypeInputResolved))
	wantActivity(t, s, ActivityWorking)
	// A resolution without a waiting request is no evidence of anything.
	for _, before := range [][]Event{nil, seq(TypeSessionStart), seq(TypeUserPromptSubmit, TypeTurnStop)} {
		want := fold(before...)
		s := fold(append(before, ev(10, TypeInputResolved, AttrRequestKey, "perm-1"))...)
		wantActivity(t, s, want.Activity)
	}
}

func TestOnlyTaskStateChangesLifecycle(t *testing.T) {
	types := []string{TypeSessionStart, TypeSubagentStart, TypeUserPromptSubmit, TypeToolPreUse, TypeCommandStart,
		TypeInputRequested, TypeInputResolved, TypeTurnStop, TypeSessionEnd, TypeSubagentStop, TypeToolPostUse,
		TypeOutputChunk, TypeNarration, TypeCoordination, TypeTaskSet, TypeClaimWrite, "vendor.unknown_thing"}
	for _, start := range []TaskState{TaskActive, TaskBlocked, TaskDone} {
		for _, typ := range types {
			evs := []Event{ev(1, TypeTaskSet, AttrTask, "ship it")}
			if start != TaskActive {
				evs = append(evs, taskState(2, start, "because"))
			}
			before := fold(evs...)
			s := fold(append(evs, ev(3, typ, AttrReason, "done and dusted", AttrTaskState, "done"))...)
			wantTaskState(t, s, start)
			if !s.TaskStateUpdatedAt.Equal(before.TaskStateUpdatedAt) {
				t.Fatalf("%s moved task_state_updated_at", typ)
			}
		}
	}
	// Stopping or ending does not mark the task done.
	s := fold(ev(1, TypeTaskSet, AttrTask, "ship it"), ev(2, TypeUserPromptSubmit), ev(3, TypeTurnStop), ev(4, TypeSessionEnd))
	wantTaskState(t, s, TaskActive)
	if s.TaskStateDeclared || !s.TaskStateUpdatedAt.Equal(s.StartedAt) {
		t.Fatal("task_state_updated_at moved without a lifecycle event")
	}
	s = fold(ev(1, TypeTaskSet, AttrTask, "ship it"), taskState(2, TaskDone, "complete"))
	wantTaskState(t, s, TaskDone)
	if !s.TaskStateUpdatedAt.Equal(ev(2, "").TS) {
		t.Fatalf("task_state_updated_at = %v", s.TaskStateUpdatedAt)
	}
}

func TestBlockedRequiresReason(t *testing.T) {
	s := NewState(testSession)
	if _, err := Declare(&s, TaskBlocked, ""); !errors.Is(err, ErrReasonRequired) {
		t.Fatalf("Declare(blocked, \"\") = %v, want ErrReasonRequired", err)
	}
	d, err := Declare(&s, TaskBlocked, "waiting for repository access")
	if err != nil || d.Noop || d.Attrs[AttrReason] != "waiting for repository access" || d.Attrs[AttrTaskState] != "blocked" {
		t.Fatalf("Declare(blocked, reason) = %+v, %v", d, err)
	}
	// A recorded blocked event without a reason changes nothing.
	got := fold(ev(1, TypeUserPromptSubmit), taskState(2, TaskBlocked, ""))
	wantTaskState(t, got, TaskActive)
	if got.TaskStateDeclared {
		t.Fatal("a reasonless blocked event was recorded")
	}
}

func TestLeavingBlockedClearsReason(t *testing.T) {
	blocked := []Event{ev(1, TypeTaskSet, AttrTask, "t"), taskState(2, TaskBlocked, "waiting for repository access")}
	s := fold(blocked...)
	if s.BlockerReason != "waiting for repository access" {
		t.Fatalf("blocker reason %q", s.BlockerReason)
	}
	s = fold(append(blocked, taskState(3, TaskActive, ""))...)
	wantTaskState(t, s, TaskActive)
	if s.BlockerReason != "" || s.LifecycleReason != "" {
		t.Fatalf("reopened task keeps blocker %q / reason %q", s.BlockerReason, s.LifecycleReason)
	}
	s = fold(append(blocked, taskState(3, TaskDone, "implementation and verification complete"))...)
	wantTaskState(t, s, TaskDone)
	if s.BlockerReason != "" || s.LifecycleReason != "implementation and verification complete" {
		t.Fatalf("done keeps blocker %q / reason %q", s.BlockerReason, s.LifecycleReason)
	}
	// Reblocking with a new reason replaces it.
	s = fold(append(blocked, taskState(3, TaskBlocked, "waiting for review"))...)
	if s.BlockerReason != "waiting for review" {
		t.Fatalf("blocker reason %q", s.BlockerReason)
	}
	// Declare from blocked to active records an event without the reason.
	b := fold(blocked...)
	d, err := Declare(&b, TaskActive, "")
	if err != nil || d.Noop {
		t.Fatalf("Declare(active) = %+v, %v", d, err)
	}
	if _, ok := d.Attrs[AttrReason]; ok {
		t.Fatal("the reopening event carries the old reason")
	}
}

func TestRepeatingSameStateAndReasonRecordsNothing(t *testing.T) {
	evs := []Event{ev(1, TypeTaskSet, AttrTask, "t"), taskState(2, TaskBlocked, "waiting")}
	s := fold(evs...)
	d, err := Declare(&s, TaskBlocked, "waiting")
	if err != nil || !d.Noop || d.Attrs != nil {
		t.Fatalf("repeat: %+v, %v; want a no-op", d, err)
	}
	// The default state repeated is nothing too.
	n := NewState(testSession)
	if d, err := Declare(&n, TaskActive, ""); err != nil || !d.Noop {
		t.Fatalf("active on a fresh session: %+v, %v", d, err)
	}
	// Replaying a repeated event changes nothing, not even the time.
	again := fold(append(evs, taskState(3, TaskBlocked, "waiting"))...)
	if !again.TaskStateUpdatedAt.Equal(s.TaskStateUpdatedAt) || again.BlockerReason != "waiting" {
		t.Fatalf("repeat moved the lifecycle: %v", again.TaskStateUpdatedAt)
	}
	// The same state with another reason is a change.
	d, err = Declare(&s, TaskBlocked, "waiting for review")
	if err != nil || d.Noop {
		t.Fatalf("new reason: %+v, %v", d, err)
	}
	changed := fold(append(evs, taskState(3, TaskBlocked, "waiting for review"))...)
	if !changed.TaskStateUpdatedAt.Equal(ev(3, "").TS) {
		t.Fatal("a new reason was not recorded")
	}
}

func TestSubagentCannotDeclareLifecycle(t *testing.T) {
	s := fold(sub(ev(1, TypeSubagentStart)), sub(ev(2, TypeTaskSet, AttrTask, "t")))
	for _, to := range []TaskState{TaskActive, TaskBlocked, TaskDone} {
		if _, err := Declare(&s, to, "r"); !errors.Is(err, ErrSubagent) {
			t.Fatalf("Declare(%s) by a subagent = %v, want ErrSubagent", to, err)
		}
	}
	// A subagent's recorded declaration changes nothing.
	got := fold(sub(ev(1, TypeSubagentStart)), sub(ev(2, TypeTaskSet, AttrTask, "t")), sub(taskState(3, TaskDone, "finished")))
	wantTaskState(t, got, TaskActive)
	if got.TaskStateDeclared || got.LifecycleReason != "" {
		t.Fatal("a subagent's declaration was applied")
	}
}

func TestDoneRequiresCurrentTask(t *testing.T) {
	s := fold(ev(1, TypeSessionStart, AttrSessionName, "harn-7"))
	if _, err := Declare(&s, TaskDone, "complete"); !errors.Is(err, ErrNoTask) {
		t.Fatalf("Declare(done) without a task = %v, want ErrNoTask", err)
	}
	// A task cleared by an empty set-task is no task.
	s = fold(ev(1, TypeTaskSet, AttrTask, "t"), ev(2, TypeTaskSet, AttrTask, ""))
	if _, err := Declare(&s, TaskDone, ""); !errors.Is(err, ErrNoTask) {
		t.Fatalf("Declare(done) after clearing the task = %v, want ErrNoTask", err)
	}
	s = fold(ev(1, TypeTaskSet, AttrTask, "t"))
	d, err := Declare(&s, TaskDone, "complete")
	if err != nil || d.Noop || d.Attrs[AttrTaskState] != "done" {
		t.Fatalf("Declare(done) with a task = %+v, %v", d, err)
	}
}

func TestSetTaskIsLifecycleNeutral(t *testing.T) {
	for _, st := range []TaskState{TaskBlocked, TaskDone} {
		evs := []Event{ev(1, TypeTaskSet, AttrTask, "first"), taskState(2, st, "because")}
		before := fold(evs...)
		s := fold(append(evs, ev(3, TypeTaskSet, AttrTask, "second"))...)
		wantTaskState(t, s, st)
		if s.Task != "second" || s.LifecycleReason != before.LifecycleReason || s.BlockerReason != before.BlockerReason ||
			!s.TaskStateUpdatedAt.Equal(before.TaskStateUpdatedAt) {
			t.Fatalf("set-task while %s: %+v", st, s)
		}
	}
	s := fold(ev(1, TypeTaskSet, AttrTask, "first"))
	wantTaskState(t, s, TaskActive)
	if s.TaskStateDeclared {
		t.Fatal("set-task recorded a lifecycle change")
	}
}

func TestDefaultTaskStateIsActive(t *testing.T) {
	if s := NewState(testSession); s.TaskState != TaskActive {
		t.Fatalf("NewState: %q", s.TaskState)
	}
	if s := Fold(nil); s.TaskState != TaskActive {
		t.Fatalf("Fold(nil): %q", s.TaskState)
	}
	wantTaskState(t, fold(seq(TypeSessionStart, TypeUserPromptSubmit, TypeTurnStop, TypeSessionEnd)...), TaskActive)
	// Step from a zero state (an older heartbeat) defaults too.
	e := ev(1, TypeNarration)
	wantTaskState(t, Step(State{}, &e), TaskActive)
	// An older heartbeat without the lifecycle fields reads as active.
	var s State
	if err := json.Unmarshal([]byte(`{"session_id":"s-42","activity":"idle"}`), &s); err != nil {
		t.Fatal(err)
	}
	wantTaskState(t, s, TaskActive)
}

func TestUnknownActivityAtStart(t *testing.T) {
	wantActivity(t, NewState(testSession), ActivityUnknown)
	wantActivity(t, Fold(nil), ActivityUnknown)
	// Events that are no activity evidence leave it unknown.
	s := fold(ev(1, TypeTaskSet, AttrTask, "t"), ev(2, TypeToolPostUse), ev(3, TypeOutputChunk), ev(4, TypeNarration),
		ev(5, TypeCoordination), ev(6, TypeClaimWrite, AttrPaths, []string{"a"}), ev(7, "vendor.x"),
		ev(8, TypeCommandStart), ev(9, TypeInputResolved), taskState(10, TaskBlocked, "r"))
	wantActivity(t, s, ActivityUnknown)
	if !s.ActivityUpdatedAt.IsZero() || s.ActivitySource != "" {
		t.Fatalf("unknown activity has a source %q at %v", s.ActivitySource, s.ActivityUpdatedAt)
	}
	var r State
	if err := json.Unmarshal([]byte(`{"session_id":"s-42"}`), &r); err != nil {
		t.Fatal(err)
	}
	wantActivity(t, r, ActivityUnknown)
}

func TestNameProjectionActive(t *testing.T) {
	if got := ProjectName("harn-7", "add the decoder", TaskActive); got != "Agent harn-7 - add the decoder" {
		t.Fatalf("got %q", got)
	}
	s := fold(ev(1, TypeSessionStart, AttrSessionName, "harn-7"), ev(2, TypeTaskSet, AttrTask, "add the decoder"))
	if got := s.SessionName(); got != "Agent harn-7 - add the decoder" {
		t.Fatalf("SessionName = %q", got)
	}
}

func TestNameProjectionBlocked(t *testing.T) {
	if got := ProjectName("harn-7", "add the decoder", TaskBlocked); got != "[BLOCKED] - Agent harn-7 - add the decoder" {
		t.Fatalf("got %q", got)
	}
	s := fold(ev(1, TypeSessionStart, AttrSessionName, "harn-7"), ev(2, TypeTaskSet, AttrTask, "add the decoder"), taskState(3, TaskBlocked, "r"))
	if got := s.SessionName(); got != "[BLOCKED] - Agent harn-7 - add the decoder" {
		t.Fatalf("SessionName = %q", got)
	}
}

func TestNameProjectionDone(t *testing.T) {
	if got := ProjectName("harn-7", "add the decoder", TaskDone); got != "[DONE] - Agent harn-7 - add the decoder" {
		t.Fatalf("got %q", got)
	}
	s := fold(ev(1, TypeSessionStart, AttrSessionName, "harn-7"), ev(2, TypeTaskSet, AttrTask, "add the decoder"), taskState(3, TaskDone, ""))
	if got := s.SessionName(); got != "[DONE] - Agent harn-7 - add the decoder" {
		t.Fatalf("SessionName = %q", got)
	}
}

func TestLifecycleEventCarriesSuggestedNameAndReminted(t *testing.T) {
	evs := []Event{ev(1, TypeSessionStart, AttrSessionName, "harn-7"), ev(2, TypeTaskSet, AttrTask, "add the decoder")}
	s := fold(evs...)
	d, err := Declare(&s, TaskBlocked, "waiting for repository access")
	if err != nil {
		t.Fatal(err)
	}
	if d.Attrs[AttrSuggestedName] != "[BLOCKED] - Agent harn-7 - add the decoder" || d.Attrs[AttrNameReminted] != true {
		t.Fatalf("attrs %v", d.Attrs)
	}
	// Record it: the folded state shows the suggestion as its name.
	e := ev(3, TypeTaskState)
	e.Attrs = d.Attrs
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
	s = fold(append(evs, e)...)
	if s.SuggestedSessionName != "[BLOCKED] - Agent harn-7 - add the decoder" || s.SessionName() != s.SuggestedSessionName {
		t.Fatalf("suggested %q, name %q", s.SuggestedSessionName, s.SessionName())
	}
	// A change that keeps the name carries it without name_reminted.
	d, err = Declare(&s, TaskBlocked, "waiting for review")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Attrs[AttrNameReminted]; ok || d.Attrs[AttrSuggestedName] != s.SessionName() {
		t.Fatalf("same-name change: %v", d.Attrs)
	}
	// The title is a projection: nothing reads it back into lifecycle.
	s = fold(append(evs, ev(3, TypeNarration, AttrSessionName, "[DONE] - Agent harn-7 - add the decoder"))...)
	wantTaskState(t, s, TaskActive)
}

func TestReplayOrdersByTimestamp(t *testing.T) {
	older := ev(1, TypeTurnStop)
	newer := ev(2, TypeUserPromptSubmit)
	// Appended in the wrong order: the older stop must not roll the
	// state back from working to idle.
	p := newProject(testSession)
	p.add(newer)
	p.add(older)
	wantActivity(t, p.s, ActivityWorking)
	want := fold(newer, older)
	wantActivity(t, want, ActivityWorking)
	if !reflect.DeepEqual(p.s, want) {
		t.Fatalf("live %+v\nfold %+v", p.s, want)
	}
	// A Step that ignored InOrder would have rolled it back; InOrder says so.
	if InOrder(&p.s, &older) {
		t.Fatal("InOrder accepts an older event")
	}
	// Ties on ts order by id.
	a, b := ev(5, TypeUserPromptSubmit), ev(5, TypeTurnStop)
	a.ID, b.ID = "b", "a"
	wantActivity(t, fold(a, b), ActivityWorking)
	wantActivity(t, fold(b, a), ActivityWorking)
}

func TestReplayWithoutHeartbeatGivesSameState(t *testing.T) {
	evs := []Event{
		ev(1, TypeSessionStart, AttrSessionName, "harn-7", AttrCwd, "/src/harn"),
		ev(2, TypeTaskSet, AttrTask, "add the decoder"),
		ev(3, TypeUserPromptSubmit),
		ev(4, TypeToolPreUse, AttrTool, "Edit"),
		ev(5, TypeClaimWrite, AttrPaths, []string{"presence/jsonl.go"}),
		ev(6, TypeToolPostUse, AttrTool, "Edit"),
		taskState(7, TaskBlocked, "waiting for repository access"),
		ev(8, TypeInputRequested, AttrRequestKey, "perm-1"),
	}
	// Live projection, with the last two events arriving out of order.
	p := newProject(testSession)
	for _, i := range []int{0, 1, 2, 3, 4, 5, 7, 6} {
		p.add(evs[i])
	}
	heartbeat, err := json.Marshal(p.s)
	if err != nil {
		t.Fatal(err)
	}
	// The heartbeat is removed; the ledger slice is replayed.
	var ledger strings.Builder
	for _, e := range evs {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		ledger.Write(b)
		ledger.WriteByte('\n')
	}
	replayed, err := DecodeJSONL(strings.NewReader(ledger.String()))
	if err != nil {
		t.Fatal(err)
	}
	got := Fold(replayed)
	if !reflect.DeepEqual(got, p.s) {
		t.Fatalf("replay %+v\nlive   %+v", got, p.s)
	}
	// And the replayed state writes the same heartbeat.
	again, _ := json.Marshal(got)
	if string(again) != string(heartbeat) {
		t.Fatalf("heartbeat\n%s\nreplayed\n%s", heartbeat, again)
	}
}

func TestPresenceHashCoversStateOnlyChanges(t *testing.T) {
	base := []Event{ev(1, TypeSessionStart, AttrSessionName, "harn-7"), ev(2, TypeTaskSet, AttrTask, "t"), ev(3, TypeUserPromptSubmit)}
	h0 := PresenceHash(new(fold(base...)))
	changes := map[string]Event{
		"activity":       ev(4, TypeInputRequested),
		"lifecycle":      taskState(4, TaskDone, ""),
		"blocker reason": taskState(4, TaskBlocked, "waiting"),
		"task":           ev(4, TypeTaskSet, AttrTask, "u"),
		"claims":         ev(4, TypeClaimWrite, AttrPaths, []string{"a.go"}),
		"end":            ev(4, TypeSessionEnd),
	}
	for name, e := range changes {
		if h := PresenceHash(new(fold(append(base, e)...))); h == h0 {
			t.Errorf("a %s change leaves the hash", name)
		}
	}
	// Blocked with one reason, then another: only the reason changed.
	b1 := fold(append(base, taskState(4, TaskBlocked, "waiting"))...)
	b2 := fold(append(base, taskState(4, TaskBlocked, "waiting"), taskState(5, TaskBlocked, "waiting for review"))...)
	if PresenceHash(&b1) == PresenceHash(&b2) {
		t.Error("a blocker reason change leaves the hash")
	}
	// Timestamps alone never change it: the same events an hour later,
	// and noise that moves only the last-event time.
	late := make([]Event, len(base))
	for i, e := range base {
		e.TS = e.TS.Add(time.Hour)
		late[i] = e
	}
	if PresenceHash(new(fold(late...))) != h0 {
		t.Error("moving timestamps changes the hash")
	}
	if PresenceHash(new(fold(append(base, ev(9, TypeNarration), ev(10, TypeToolPostUse))...))) != h0 {
		t.Error("noise changes the hash")
	}
	s := fold(base...)
	s.ActivityUpdatedAt, s.TaskStateUpdatedAt, s.LastEventAt = s.ActivityUpdatedAt.Add(time.Minute), t0, t0.Add(time.Hour)
	if PresenceHash(&s) != h0 {
		t.Error("a time field changes the hash")
	}
}

func TestBlockerReasonBoundedInHash(t *testing.T) {
	long := strings.Repeat("é", MaxHashedReason)
	a := fold(ev(1, TypeTaskSet, AttrTask, "t"), taskState(2, TaskBlocked, long+" one"))
	b := fold(ev(1, TypeTaskSet, AttrTask, "t"), taskState(2, TaskBlocked, long+" two"))
	c := fold(ev(1, TypeTaskSet, AttrTask, "t"), taskState(2, TaskBlocked, "x"+long[2:]+" one"))
	if PresenceHash(&a) != PresenceHash(&b) {
		t.Error("the hash covers the reason past its bound")
	}
	if PresenceHash(&a) == PresenceHash(&c) {
		t.Error("the hash misses a change within the bound")
	}
	if got := boundRunes(long+"abc", MaxHashedReason); got != long {
		t.Errorf("boundRunes cut %d runes", len([]rune(got)))
	}
}

func TestUnknownTypesStoredChangeNothing(t *testing.T) {
	unknown := ev(4, "vendor.telemetry", "anything", "goes")
	if err := unknown.Validate(); err != nil {
		t.Fatalf("an unknown type is refused: %v", err)
	}
	if KnownTypes[unknown.Type] {
		t.Fatal("test type is known")
	}
	// Stored: the decoder keeps it.
	b, _ := json.Marshal(unknown)
	got, err := DecodeJSONL(strings.NewReader(string(b) + "\n"))
	if err != nil || len(got) != 1 || got[0].Type != "vendor.telemetry" {
		t.Fatalf("decoded %v, %v", got, err)
	}
	// Changes nothing but the bookkeeping of what was folded.
	for _, base := range [][]Event{
		nil,
		seq(TypeUserPromptSubmit, TypeInputRequested, TypeTaskSet),
		{ev(1, TypeTaskSet, AttrTask, "t"), taskState(2, TaskBlocked, "r"), ev(3, TypeSessionEnd)},
	} {
		want := fold(base...)
		s := fold(append(base, unknown)...)
		s.Events, s.LastTS, s.LastID, s.LastEventAt, s.StartedAt = want.Events, want.LastTS, want.LastID, want.LastEventAt, want.StartedAt
		if !want.TaskStateDeclared {
			s.TaskStateUpdatedAt = want.TaskStateUpdatedAt
		}
		if base == nil {
			s.SessionID, s.Agent = want.SessionID, want.Agent
		}
		if !reflect.DeepEqual(s, want) {
			t.Fatalf("unknown type changed\n%+v\nfrom\n%+v", s, want)
		}
	}
}

func TestDuplicateIDsIgnored(t *testing.T) {
	evs := []Event{ev(1, TypeUserPromptSubmit), ev(2, TypeClaimWrite, AttrPaths, []string{"a.go"}), ev(3, TypeTurnStop)}
	want := fold(evs...)
	got := fold(append(evs, evs[2], evs[0], evs[1], evs[2])...)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("duplicates changed the state\n%+v\n%+v", got, want)
	}
	if got.Events != 3 {
		t.Fatalf("folded %d events", got.Events)
	}
	// The same id at another time is the same event: the first by (ts, id)
	// counts, wherever the copy lands.
	late := evs[0]
	late.TS = late.TS.Add(time.Hour)
	got = fold(append(evs, late)...)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("a late copy changed the state\n%+v\n%+v", got, want)
	}
	// Live projection skips them too.
	p := newProject(testSession)
	for _, e := range append(evs, evs[1], evs[0]) {
		p.add(e)
	}
	if !reflect.DeepEqual(p.s, want) {
		t.Fatalf("live projection\n%+v\n%+v", p.s, want)
	}
}

func TestEventValidation(t *testing.T) {
	valid := ev(1, TypeToolPreUse, AttrTool, "Bash")
	if err := valid.Validate(); err != nil {
		t.Fatalf("valid event refused: %v", err)
	}
	noID := valid
	noID.ID = ""
	if err := noID.Validate(); err != nil {
		t.Fatalf("an event without id (the node assigns one) is refused: %v", err)
	}
	cases := []struct {
		name  string
		field string
		edit  func(e *Event)
	}{
		{"no session", "session_id", func(e *Event) { e.SessionID = "" }},
		{"session with slash", "session_id", func(e *Event) { e.SessionID = "a/b" }},
		{"session too long", "session_id", func(e *Event) { e.SessionID = strings.Repeat("s", MaxIDLen+1) }},
		{"id too long", "id", func(e *Event) { e.ID = strings.Repeat("i", MaxIDLen+1) }},
		{"no type", "type", func(e *Event) { e.Type = "" }},
		{"type too long", "type", func(e *Event) { e.Type = strings.Repeat("t", MaxTypeLen+1) }},
		{"no ts", "ts", func(e *Event) { e.TS = time.Time{} }},
		{"ts beyond the wire", "ts", func(e *Event) { e.TS = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC) }},
		{"reason too long", "attrs.reason", func(e *Event) { e.SetAttr(AttrReason, strings.Repeat("é", MaxReasonChars+1)) }},
		{"unknown task state", "attrs.task_state", func(e *Event) { e.Type = TypeTaskState; e.SetAttr(AttrTaskState, "finished") }},
		{"nested attr", "attrs.x", func(e *Event) { e.SetAttr("x", map[string]any{"y": 1}) }},
		{"NaN attr", "attrs.x", func(e *Event) { e.SetAttr("x", math.NaN()) }},
		{"attr too long", "attrs.x", func(e *Event) { e.SetAttr("x", strings.Repeat("x", MaxAttrStringLen+1)) }},
		{"over 64 KiB", "event", func(e *Event) {
			for i := 0; i < 9; i++ {
				e.SetAttr(string(rune('a'+i)), strings.Repeat("x", MaxAttrStringLen))
			}
		}},
		// Escaping makes 8 KiB of "<" 48 KiB of JSON: two are over the limit.
		{"over 64 KiB once escaped", "event", func(e *Event) {
			e.SetAttr("a", strings.Repeat("<", MaxAttrStringLen))
			e.SetAttr("b", strings.Repeat("<", MaxAttrStringLen))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := valid
			e.Attrs = map[string]any{AttrTool: "Bash"}
			c.edit(&e)
			err := e.Validate()
			if !errors.Is(err, ErrInvalidEvent) {
				t.Fatalf("Validate = %v, want ErrInvalidEvent", err)
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != c.field || fe.Msg == "" {
				t.Fatalf("Validate = %#v, want a *FieldError naming %s", err, c.field)
			}
		})
	}
	// A reason of exactly 1000 characters passes.
	e := valid
	e.Attrs = map[string]any{AttrReason: strings.Repeat("é", MaxReasonChars)}
	if err := e.Validate(); err != nil {
		t.Fatalf("a reason at the limit is refused: %v", err)
	}
	// Every valid event fits a JSONL line.
	e.Attrs = map[string]any{}
	for i := 0; i < 7; i++ {
		e.SetAttr(string(rune('a'+i)), strings.Repeat("x", MaxAttrStringLen))
	}
	if err := e.Validate(); err != nil {
		t.Fatalf("a 57 KiB event is refused: %v", err)
	}
	if b, _ := json.Marshal(e); len(b) > MaxEventBytes {
		t.Fatalf("a valid event encodes to %d bytes", len(b))
	}
}

func TestStateJSONFieldNames(t *testing.T) {
	// The seed's heartbeat example.
	evs := []Event{
		{ID: "a", SessionID: testSession, Type: TypeTaskSet, TS: time.Date(2026, 8, 12, 9, 0, 0, 0, time.UTC), Attrs: map[string]any{AttrTask: "t"}},
		{ID: "b", SessionID: testSession, Type: TypeTaskState, TS: time.Date(2026, 8, 12, 9, 30, 0, 0, time.UTC), Attrs: map[string]any{AttrTaskState: "active", AttrReason: "resumed"}},
		{ID: "c", SessionID: testSession, Type: TypeUserPromptSubmit, TS: time.Date(2026, 8, 12, 10, 1, 0, 0, time.UTC)},
		{ID: "d", SessionID: testSession, Type: TypeInputRequested, TS: time.Date(2026, 8, 12, 10, 2, 0, 0, time.UTC)},
	}
	s := fold(evs...)
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"activity":              "needs_input",
		"activity_updated_at":   "2026-08-12T10:02:00.000Z",
		"activity_source":       "interaction.input_requested",
		"task_state":            "active",
		"task_state_updated_at": "2026-08-12T09:30:00.000Z",
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	if _, ok := m["blocker_reason"]; ok {
		t.Error("blocker_reason present while active")
	}
	// Blocked: blocker_reason appears.
	s2 := fold(append(evs, Event{ID: "e", SessionID: testSession, Type: TypeTaskState, TS: time.Date(2026, 8, 12, 10, 3, 0, 0, time.UTC),
		Attrs: map[string]any{AttrTaskState: "blocked", AttrReason: "waiting for repository access"}})...)
	b2, _ := json.Marshal(s2)
	m = nil
	if err := json.Unmarshal(b2, &m); err != nil {
		t.Fatal(err)
	}
	if m["blocker_reason"] != "waiting for repository access" || m["task_state"] != "blocked" || m["task_state_updated_at"] != "2026-08-12T10:03:00.000Z" {
		t.Errorf("blocked heartbeat %s", b2)
	}
	// Both round-trip.
	for _, st := range []State{s, s2} {
		raw, _ := json.Marshal(st)
		var r State
		if err := r.UnmarshalJSON(raw); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(r, st) {
			t.Fatalf("round trip\n%+v\n%+v", r, st)
		}
	}
}

// TestStepLeavesCallersStateAlone: Step takes the state by value, so the
// caller's copy must keep its claims even when the slice has room to grow.
func TestStepLeavesCallersStateAlone(t *testing.T) {
	prev := fold(ev(1, TypeClaimWrite, AttrPaths, []string{"a", "c", "d", "e"}), ev(2, TypeClaimWrite, AttrPaths, []string{"f"}))
	if cap(prev.Claims) == len(prev.Claims) {
		t.Fatal("test needs claims with spare capacity")
	}
	keep := append([]string(nil), prev.Claims...)
	e := ev(3, TypeClaimWrite, AttrPaths, []string{"b"})
	next := Step(prev, &e)
	if !reflect.DeepEqual(prev.Claims, keep) {
		t.Fatalf("Step changed the caller's claims to %v", prev.Claims)
	}
	if !reflect.DeepEqual(next.Claims, []string{"a", "b", "c", "d", "e", "f"}) {
		t.Fatalf("claims %v", next.Claims)
	}
}

// TestHeartbeatResumeKeepsOrderCursor: a projection resumed from its
// heartbeat must still refuse an older event, also below a millisecond.
func TestHeartbeatResumeKeepsOrderCursor(t *testing.T) {
	newer := ev(1, TypeUserPromptSubmit)
	newer.TS = t0.Add(500 * time.Microsecond)
	older := ev(2, TypeTurnStop)
	older.TS = t0.Add(300 * time.Microsecond)
	s := fold(newer)
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var r State
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r, s) {
		t.Fatalf("round trip\n%+v\n%+v", r, s)
	}
	if InOrder(&r, &older) {
		t.Fatal("a resumed projection takes an older event as newer")
	}
	// Millisecond times keep the seed's form.
	if got := FormatTime(t0); got != "2026-08-12T10:00:00.000Z" {
		t.Fatalf("FormatTime = %q", got)
	}
}

// Two prompts open at once: answering one leaves the session waiting on the
// other.
func TestNeedsInputHoldsUntilEveryPromptIsAnswered(t *testing.T) {
	at := func(sec int) time.Time { return time.Date(2026, 8, 12, 10, 0, sec, 0, time.UTC) }
	mk := func(id, typ string, sec int, key string) Event {
		e := Event{ID: id, SessionID: "s", Type: typ, TS: at(sec)}
		if key != "" {
			e.SetAttr(AttrRequestKey, key)
		}
		return e
	}
	evs := []Event{
		mk("1", TypeUserPromptSubmit, 1, ""),
		mk("2", TypeInputRequested, 2, "k1"),
		mk("3", TypeInputRequested, 3, "k2"),
		mk("4", TypeInputResolved, 4, "k2"),
	}
	if s := Fold(append([]Event(nil), evs...)); s.Activity != ActivityNeedsInput {
		t.Fatalf("after answering one of two prompts: %s", s.Activity)
	}
	evs = append(evs, mk("5", TypeInputResolved, 5, "k3"))
	if s := Fold(append([]Event(nil), evs...)); s.Activity != ActivityNeedsInput {
		t.Fatalf("an unrelated tool finishing cleared the prompt: %s", s.Activity)
	}
	evs = append(evs, mk("6", TypeInputResolved, 6, "k1"))
	if s := Fold(evs); s.Activity != ActivityWorking {
		t.Fatalf("after answering both: %s", s.Activity)
	}
}

// The heartbeat always carries task_state_updated_at: before any lifecycle
// event, the compatibility default active holds since the session began.
func TestDefaultTaskStateUpdatedAtIsSessionStart(t *testing.T) {
	s := fold(ev(2, TypeUserPromptSubmit), ev(1, TypeSessionStart))
	if !s.TaskStateUpdatedAt.Equal(s.StartedAt) || s.StartedAt.IsZero() {
		t.Fatalf("task_state_updated_at %v, started_at %v", s.TaskStateUpdatedAt, s.StartedAt)
	}
	s = fold(ev(1, TypeSessionStart), taskState(5, TaskBlocked, "r"), ev(0, TypeNarration))
	if s.TaskStateUpdatedAt.Equal(s.StartedAt) {
		t.Fatal("a declared lifecycle keeps its own time")
	}
}
