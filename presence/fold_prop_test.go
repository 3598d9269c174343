package presence

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// propTypes is every canonical type and one the reducer does not know.
var propTypes = func() []string {
	ts := make([]string, 0, len(KnownTypes)+1)
	for k := range KnownTypes {
		ts = append(ts, k)
	}
	sort.Strings(ts)
	return append(ts, "vendor.unknown")
}()

// genEvent draws event number i of one session: a random type with the
// attributes the reducer reads, a ts in a small range of half-milliseconds
// (so that ties and sub-millisecond times happen), and a random id that is
// unique to i (a duplicate is an exact copy, made elsewhere).
func genEvent(t *rapid.T, i int, parent string) Event {
	typ := rapid.SampledFrom(propTypes).Draw(t, "type")
	e := Event{
		ID:        rapid.StringMatching(`[a-c]{0,2}`).Draw(t, "id") + fmt.Sprintf("~%d", i),
		SessionID: testSession,
		Type:      typ,
		TS:        t0.Add(time.Duration(rapid.IntRange(0, 12).Draw(t, "ts")) * 500 * time.Microsecond),
		Agent:     rapid.SampledFrom([]string{"", "claude-code", "codex"}).Draw(t, "agent"),
	}
	if rapid.IntRange(0, 9).Draw(t, "parented") == 0 {
		e.ParentSessionID = parent
	}
	key := func() string { return rapid.SampledFrom([]string{"", "k1", "k2"}).Draw(t, "request_key") }
	switch typ {
	case TypeTaskState:
		e.SetAttr(AttrTaskState, rapid.SampledFrom([]string{"active", "blocked", "done"}).Draw(t, "task_state"))
		if r := rapid.SampledFrom([]string{"", "r1", "r2", " ", "\t\n", string(bytes.Repeat([]byte("é"), MaxHashedReason)) + "!"}).Draw(t, "reason"); r != "" {
			e.SetAttr(AttrReason, r)
		}
		if rapid.Bool().Draw(t, "suggest") {
			e.SetAttr(AttrSuggestedName, rapid.SampledFrom(propNames).Draw(t, "suggested"))
			e.SetAttr(AttrNameReminted, true)
		}
	case TypeTaskSet:
		e.SetAttr(AttrTask, rapid.SampledFrom([]string{"", "t1", "t2", "  "}).Draw(t, "task"))
	case TypeClaimWrite:
		e.SetAttr(AttrPaths, rapid.SliceOfN(rapid.SampledFrom([]string{"", "a.go", "b.go", "c/d.go"}), 0, 3).Draw(t, "paths"))
	case TypeInputRequested, TypeInputResolved, TypeToolPreUse:
		if k := key(); k != "" && typ != TypeToolPreUse {
			e.SetAttr(AttrRequestKey, k)
		}
		if c := rapid.SampledFrom([]string{"", "call:a", "call:b"}).Draw(t, "call_key"); c != "" {
			e.SetAttr(AttrCallKey, c)
		}
		if d := rapid.SampledFrom([]string{"", "k1", "d2"}).Draw(t, "input_key"); d != "" {
			e.SetAttr(AttrInputKey, d)
		}
		if typ == TypeInputRequested {
			if w := rapid.SampledFrom([]string{"", "Bash", "Bash: git", "Edit a.go"}).Draw(t, "summary"); w != "" {
				e.SetAttr(AttrSummary, w)
			}
		}
	case TypeSessionNameSeen:
		e.SetAttr(AttrName, rapid.SampledFrom(propNames).Draw(t, "seen"))
	case TypeUserPromptSubmit:
		if rapid.Bool().Draw(t, "where") {
			e.SetAttr(AttrRepo, rapid.SampledFrom([]string{"harn", "shop"}).Draw(t, "repo"))
			e.SetAttr(AttrBranch, rapid.SampledFrom([]string{"main", "fix"}).Draw(t, "branch"))
		}
	case TypeSessionStart, TypeSubagentStart:
		if rapid.Bool().Draw(t, "named") {
			e.SetAttr(AttrSessionName, rapid.SampledFrom([]string{"harn-1", "harn-2"}).Draw(t, "name"))
		}
		if rapid.Bool().Draw(t, "pid") {
			e.SetAttr(AttrAgentPID, float64(rapid.IntRange(1, 3).Draw(t, "agent_pid")))
			e.SetAttr(AttrCwd, rapid.SampledFrom([]string{"/a", "/b"}).Draw(t, "cwd"))
		}
	case TypeSessionEnd:
		if rapid.Bool().Draw(t, "end_reason") {
			e.SetAttr(AttrReason, "exit")
		}
	}
	return e
}

// propNames are the suggested and seen session names the generator uses.
var propNames = []string{"Agent harn-1 - t1", "[BLOCKED] - Agent harn-1 - t1", "Agent x - t", "[DONE] - Agent harn-2 - t2"}

// genEvents draws a set of distinct events of one session.
func genEvents(t *rapid.T, max int) []Event {
	return genEventsN(t, 0, max)
}

func genEventsN(t *rapid.T, min, max int) []Event {
	n := rapid.IntRange(min, max).Draw(t, "n")
	evs := make([]Event, n)
	for i := range evs {
		evs[i] = genEvent(t, i, "s-parent")
	}
	return evs
}

// withDuplicates appends exact copies of some of evs.
func withDuplicates(t *rapid.T, evs []Event) []Event {
	out := slices.Clone(evs)
	if len(evs) == 0 {
		return out
	}
	for _, i := range rapid.SliceOfN(rapid.IntRange(0, len(evs)-1), 0, len(evs)).Draw(t, "dups") {
		out = append(out, evs[i])
	}
	return out
}

func sortedFold(evs []Event) State { return Fold(slices.Clone(evs)) }

func stateDiff(t *rapid.T, what string, got, want State) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s\n got %+v\nwant %+v", what, got, want)
	}
}

// (a) For any arrival order, the live projection (Step what is in order,
// fold again otherwise, skip known ids) equals the fold of the sorted set.
func TestPropLiveProjectionEqualsFold(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		all := withDuplicates(t, genEventsN(t, 1, 30))
		arrival := rapid.Permutation(all).Draw(t, "arrival")
		sorted := slices.Clone(all)
		SortEvents(sorted)
		want := Fold(sorted)

		p := newProject(testSession)
		for _, e := range arrival {
			p.add(e)
		}
		stateDiff(t, "live projection", p.s, want)
	})
}

// (a') The same with the projection persisted to its heartbeat and resumed
// from it at random points, as a restarted node does.
func TestPropResumedProjectionEqualsFold(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		all := withDuplicates(t, genEventsN(t, 1, 30))
		arrival := rapid.Permutation(all).Draw(t, "arrival")
		want := sortedFold(all)

		p := newProject(testSession)
		for _, e := range arrival {
			p.add(e)
			if rapid.IntRange(0, 3).Draw(t, "resume") == 0 {
				b, err := json.Marshal(p.s)
				if err != nil {
					t.Fatal(err)
				}
				var r State
				if err := json.Unmarshal(b, &r); err != nil {
					t.Fatal(err)
				}
				stateDiff(t, "heartbeat round trip", r, p.s)
				p.s = r
			}
		}
		stateDiff(t, "resumed projection", p.s, want)
	})
}

// (b) Fold is idempotent under duplication of events, in any order.
func TestPropFoldIgnoresDuplicates(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		evs := genEvents(t, 30)
		want := sortedFold(evs)
		dup := rapid.Permutation(withDuplicates(t, evs)).Draw(t, "order")
		stateDiff(t, "fold with duplicates", sortedFold(dup), want)
		stateDiff(t, "fold of everything twice", sortedFold(append(slices.Clone(evs), evs...)), want)
	})
}

// (c) Moving timestamps without reordering changes neither the presence
// hash nor any field but the times.
func TestPropHashIgnoresTimestamps(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		evs := genEvents(t, 30)
		// Map each distinct ts to a new, strictly increasing one.
		var distinct []time.Time
		for _, e := range evs {
			distinct = append(distinct, e.TS)
		}
		slices.SortFunc(distinct, time.Time.Compare)
		distinct = slices.CompactFunc(distinct, time.Time.Equal)
		moved := map[time.Time]time.Time{}
		at := t0.Add(-time.Duration(rapid.IntRange(0, 1e6).Draw(t, "start")) * time.Millisecond)
		for _, ts := range distinct {
			at = at.Add(time.Duration(rapid.IntRange(1, 1e9).Draw(t, "gap")))
			moved[ts] = at
		}
		shifted := slices.Clone(evs)
		for i := range shifted {
			shifted[i].TS = moved[shifted[i].TS]
		}
		a, b := sortedFold(evs), sortedFold(shifted)
		if PresenceHash(&a) != PresenceHash(&b) {
			t.Fatalf("hash moved with the timestamps\n%+v\n%+v", a, b)
		}
		stateDiff(t, "state without its times", untimed(b), untimed(a))
	})
}

// untimed clears every time field of s.
func untimed(s State) State {
	s.ActivityUpdatedAt, s.TaskStateUpdatedAt, s.StartedAt, s.LastEventAt, s.EndedAt, s.LastTS = time.Time{}, time.Time{}, time.Time{}, time.Time{}, time.Time{}, time.Time{}
	s.LastEvidenceAt, s.SilentSince = time.Time{}, time.Time{}
	return s
}

// (d) Elapsed time changes nothing. The fold takes no clock (the package
// reads none: TestPresenceReadsNoClock), so it is a function of its events;
// what a reader derives from the time (SilentSince) leaves the state, its
// activity and its hash alone, and the fold never sets silent_since.
func TestPropElapsedTimeChangesNothing(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		evs := genEvents(t, 20)
		a := sortedFold(evs)
		if !a.SilentSince.IsZero() || a.WaitingChild != "" {
			t.Fatalf("the fold set a reader's field: %+v", a)
		}
		hash := PresenceHash(&a)
		b := a
		now := t0.Add(time.Duration(rapid.Int64Range(-1e6, 1e9).Draw(t, "now_ms")) * time.Millisecond)
		after := time.Duration(rapid.Int64Range(0, 1e7).Draw(t, "after_ms")) * time.Millisecond
		b.SilentSince = SilentSince(&b, now, after)
		if !b.SilentSince.IsZero() && (b.Activity != ActivityWorking || now.Sub(b.SilentSince) <= after) {
			t.Fatalf("silent since %v at %v (after %v) for %s", b.SilentSince, now, after, b.Activity)
		}
		if PresenceHash(&b) != hash {
			t.Fatal("hash moved with the clock")
		}
		b.SilentSince = time.Time{}
		stateDiff(t, "state after asking about silence", b, a)
		stateDiff(t, "fold again", sortedFold(evs), a)
	})
}

// (e) needs_input is never cleared by tool.post_use, output.chunk,
// narration, coordination.command or an unknown type (nor by task, claim
// or lifecycle events), however many arrive and whenever.
func TestPropNoiseNeverClearsNeedsInput(t *testing.T) {
	noise := []string{TypeToolPostUse, TypeOutputChunk, TypeNarration, TypeCoordination, "vendor.unknown", TypeTaskSet, TypeClaimWrite, TypeTaskState}
	rapid.Check(t, func(t *rapid.T) {
		evs := genEvents(t, 20)
		req := genEvent(t, len(evs), "s-parent")
		req.Type, req.Attrs = TypeInputRequested, nil
		if k := rapid.SampledFrom([]string{"", "k1"}).Draw(t, "key"); k != "" {
			req.SetAttr(AttrRequestKey, k)
		}
		req.TS = t0.Add(time.Hour)
		evs = append(evs, req)
		waiting := sortedFold(evs)
		wantActivity(t, waiting, ActivityNeedsInput)

		n := rapid.IntRange(1, 20).Draw(t, "noise")
		for i := 0; i < n; i++ {
			e := genEvent(t, len(evs), "s-parent")
			e.Type = rapid.SampledFrom(noise).Draw(t, "noise_type")
			if e.Type == TypeTaskState && e.AttrString(AttrTaskState) == "" {
				e.SetAttr(AttrTaskState, "blocked")
				e.SetAttr(AttrReason, "r")
			}
			e.TS = req.TS.Add(time.Duration(rapid.IntRange(0, 1e6).Draw(t, "later")) * time.Second)
			evs = append(evs, e)
		}
		s := sortedFold(rapid.Permutation(evs).Draw(t, "order"))
		wantActivity(t, s, ActivityNeedsInput)
		if !s.ActivityUpdatedAt.Equal(waiting.ActivityUpdatedAt) || s.ActivitySource != waiting.ActivitySource || !slices.Equal(s.PendingRequests, waiting.PendingRequests) {
			t.Fatalf("noise moved activity: %+v", s)
		}
	})
}

// A request resolved by its key does not stay needs_input, whatever came
// before it and whatever noise came between, and a resolution naming
// another call (a stale one) never clears it: the operator's answer (its
// request_key), or the post-use of the same call by tool_use_id even when
// its input differs (a field missing), or by the input's digest when the
// agent names no call.
func TestPropRequestResolvedByItsKeyLeavesNeedsInput(t *testing.T) {
	noise := []string{TypeToolPostUse, TypeOutputChunk, TypeNarration, TypeCoordination, "vendor.unknown", TypeTaskSet, TypeClaimWrite, TypeInputResolved}
	rapid.Check(t, func(t *rapid.T) {
		evs := genEvents(t, 20)
		at, i := t0.Add(time.Hour), len(evs)
		next := func(typ string) Event {
			e := genEvent(t, i, "s-parent")
			i++
			e.Type, e.Attrs, e.TS = typ, nil, at
			at = at.Add(time.Millisecond)
			return e
		}
		call := rapid.SampledFrom([]string{"", "call:a"}).Draw(t, "call")
		pre := next(TypeToolPreUse)
		if call != "" {
			pre.SetAttr(AttrCallKey, call)
		}
		pre.SetAttr(AttrInputKey, "d1")
		req := next(TypeInputRequested)
		req.SetAttr(AttrInputKey, "d1")
		req.SetAttr(AttrRequestKey, "d1")
		if call != "" && rapid.Bool().Draw(t, "request_names_its_call") {
			req.SetAttr(AttrCallKey, call)
			req.SetAttr(AttrRequestKey, call)
		}
		evs = append(evs, pre, req)
		for n := rapid.IntRange(0, 10).Draw(t, "noise"); n > 0; n-- {
			e := next(rapid.SampledFrom(noise).Draw(t, "noise_type"))
			if e.Type == TypeInputResolved { // another call's, or a stale answer
				e.SetAttr(AttrCallKey, "call:other")
				e.SetAttr(AttrInputKey, rapid.SampledFrom([]string{"d9", "d1"}).Draw(t, "other_input"))
				if e.AttrString(AttrInputKey) == "d1" && call == "" {
					e.SetAttr(AttrInputKey, "d9") // the same input of an unnamed call is this request
				}
				e.SetAttr(AttrRequestKey, "call:other")
			}
			evs = append(evs, e)
		}
		wantActivity(t, sortedFold(rapid.Permutation(evs).Draw(t, "order")), ActivityNeedsInput)
		res := next(TypeInputResolved)
		switch by := rapid.SampledFrom([]string{"operator", "post_use"}).Draw(t, "by"); {
		case by == "operator":
			res.SetAttr(AttrRequestKey, req.AttrString(AttrRequestKey))
			res.SetAttr(AttrDecision, "allow")
			res.SetAttr(AttrBy, "operator@n2")
		case call != "": // the post-use names the call; its input lacks a field
			res.SetAttr(AttrCallKey, call)
			res.SetAttr(AttrRequestKey, call)
			res.SetAttr(AttrInputKey, "d1-without-description")
		default:
			res.SetAttr(AttrInputKey, "d1")
			res.SetAttr(AttrRequestKey, "d1")
		}
		evs = append(evs, res)
		s := sortedFold(rapid.Permutation(evs).Draw(t, "order_after"))
		if s.Activity == ActivityNeedsInput {
			t.Fatalf("resolved by its key, still needs_input: pending %q, resolution %v", s.PendingRequests, res.Attrs)
		}
		wantActivity(t, s, ActivityWorking)
	})
}

// (f) Every generated event is valid, survives the JSONL ledger unchanged,
// and replaying the ledger gives the same state.
func TestPropJSONLReplayEqualsFold(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		evs := genEvents(t, 30)
		var buf bytes.Buffer
		for i := range evs {
			if err := evs[i].Validate(); err != nil {
				t.Fatalf("generated an invalid event: %v", err)
			}
			b, err := json.Marshal(evs[i])
			if err != nil {
				t.Fatal(err)
			}
			buf.Write(b)
			buf.WriteByte('\n')
		}
		got, err := DecodeJSONL(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(evs) {
			t.Fatalf("decoded %d of %d events", len(got), len(evs))
		}
		for i := range got {
			want := evs[i]
			if want.Attrs != nil && len(want.Attrs) == 0 {
				want.Attrs = nil
			}
			if !reflect.DeepEqual(got[i], want) {
				t.Fatalf("event %d changed in the ledger\n got %+v\nwant %+v", i, got[i], want)
			}
		}
		stateDiff(t, "replay", Fold(got), sortedFold(evs))
	})
}

// FoldSessions folds each session as Fold does, whatever the interleaving.
func TestPropFoldSessions(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := genEvents(t, 15)
		b := genEvents(t, 15)
		for i := range b {
			b[i].SessionID = "s-43"
		}
		mixed := rapid.Permutation(append(slices.Clone(a), b...)).Draw(t, "mixed")
		keep := slices.Clone(mixed)
		got := FoldSessions(mixed)
		if !reflect.DeepEqual(mixed, keep) {
			t.Fatal("FoldSessions reordered its input")
		}
		want := map[string]State{}
		if len(a) > 0 {
			want[testSession] = sortedFold(a)
		}
		if len(b) > 0 {
			want["s-43"] = sortedFold(b)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v\nwant %+v", got, want)
		}
	})
}

// Validate's size is never below the real encoding, whatever the text
// (escapes grow "<" and control bytes sixfold), so a valid event always
// fits a JSONL line.
func TestPropEventSizeBoundsEncoding(t *testing.T) {
	text := rapid.OneOf(rapid.String(), rapid.StringMatching(`[<>&"\\\x00-\x1f\x{2028}]{0,40}`))
	rapid.Check(t, func(t *rapid.T) {
		e := Event{
			ID:        text.Draw(t, "id"),
			SessionID: "s",
			Type:      text.Draw(t, "type"),
			TS:        time.Unix(0, rapid.Int64().Draw(t, "ts")).UTC(),
			Agent:     text.Draw(t, "agent"),
			Node:      text.Draw(t, "node"),
			Seq:       rapid.Uint64().Draw(t, "seq"),
		}
		for i, n := 0, rapid.IntRange(0, 6).Draw(t, "attrs"); i < n; i++ {
			k := fmt.Sprintf("k%d", i) + text.Draw(t, "key")
			switch rapid.IntRange(0, 4).Draw(t, "kind") {
			case 0:
				e.SetAttr(k, text.Draw(t, "value"))
			case 1:
				e.SetAttr(k, rapid.SliceOfN(text, 0, 5).Draw(t, "values"))
			case 2:
				e.SetAttr(k, rapid.Float64().Draw(t, "number"))
			case 3:
				e.SetAttr(k, rapid.Int64().Draw(t, "int"))
			default:
				e.SetAttr(k, rapid.Bool().Draw(t, "bool"))
			}
		}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if n := e.size(); len(b) > n {
			t.Fatalf("size() = %d, encoding %d bytes: %s", n, len(b), b)
		}
	})
}

// stepsOf folds evs in (ts, id) order, one event at a time, and calls f
// with the state before and after each event (duplicates skipped).
func stepsOf(evs []Event, f func(before State, e *Event, after State)) {
	sorted := slices.Clone(evs)
	SortEvents(sorted)
	s := NewState(testSession)
	seen := map[string]bool{}
	for i := range sorted {
		e := &sorted[i]
		if seen[e.ID] {
			continue
		}
		seen[e.ID] = true
		next := Step(s, e)
		f(s, e, next)
		s = next
	}
}

// The fold refuses exactly what Declare refuses: a lifecycle event changes
// the state if and only if Declare, from the state just before it (with the
// identity the event itself gives), accepts it as a change.
func TestPropFoldRefusesWhatDeclareRefuses(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		stepsOf(withDuplicates(t, genEvents(t, 30)), func(before State, e *Event, after State) {
			if e.Type != TypeTaskState {
				return
			}
			pre := before
			if pre.ParentSessionID == "" {
				pre.ParentSessionID = e.ParentSessionID
			}
			d, err := Declare(&pre, TaskState(e.AttrString(AttrTaskState)), e.AttrString(AttrReason))
			accepted := err == nil && !d.Noop
			applied := after.TaskState != before.TaskState || after.LifecycleReason != before.LifecycleReason
			if accepted != applied {
				t.Fatalf("%s %q from %s/%q (task %q, parent %q): Declare err=%v noop=%v, fold applied=%v",
					e.AttrString(AttrTaskState), e.AttrString(AttrReason), before.TaskState, before.LifecycleReason,
					before.Task, pre.ParentSessionID, err, d.Noop, applied)
			}
		})
	})
}

// A keyless request waits for progress evidence or a stop: no keyed
// resolution and no noise, in any number, clears it.
func TestPropKeylessRequestWaitsForProgress(t *testing.T) {
	noise := []string{TypeToolPostUse, TypeOutputChunk, TypeNarration, TypeCoordination, "vendor.unknown",
		TypeTaskSet, TypeClaimWrite, TypeInputResolved, TypeSessionNameSeen, TypeInputRequested}
	rapid.Check(t, func(t *rapid.T) {
		evs := genEvents(t, 20)
		// A turn is open and nothing is pending when the keyless request
		// comes.
		req := Event{ID: "req", SessionID: testSession, Type: TypeInputRequested, TS: t0.Add(time.Hour)}
		prompt := Event{ID: "prompt", SessionID: testSession, Type: TypeUserPromptSubmit, TS: req.TS.Add(-time.Nanosecond)}
		evs = append(evs, prompt, req)
		n := rapid.IntRange(1, 20).Draw(t, "noise")
		for i := 0; i < n; i++ {
			e := genEvent(t, len(evs), "s-parent")
			e.Type = rapid.SampledFrom(noise).Draw(t, "noise_type")
			e.ParentSessionID = ""
			if e.Type == TypeInputResolved || e.Type == TypeInputRequested {
				// Every adapter keys what a tool call resolves.
				e.Attrs = map[string]any{AttrRequestKey: rapid.SampledFrom([]string{"k1", "k2", "k3"}).Draw(t, "key")}
			}
			e.TS = req.TS.Add(time.Duration(rapid.IntRange(0, 1e6).Draw(t, "later")) * time.Second)
			evs = append(evs, e)
		}
		s := sortedFold(evs)
		if s.Activity == ActivityNeedsInput {
			return
		}
		// Only a keyed request in the same wait and its own resolution may
		// end it: the keyless request was that prompt's notification, or
		// the keyed request named the keyless prompt.
		keyed := map[string]bool{}
		stepsOf(evs, func(before State, e *Event, after State) {
			if Less(&prompt, e) && e.Type == TypeInputRequested && e.AttrString(AttrRequestKey) != "" {
				keyed[e.AttrString(AttrRequestKey)] = true
			}
		})
		if len(keyed) == 0 {
			t.Fatalf("a keyless request was cleared without progress: %s from %s", s.Activity, s.ActivitySource)
		}
	})
}

// "Since" means since: an event that leaves activity as it was moves
// neither activity_updated_at nor activity_source; last_evidence_at moves
// exactly with agent-activity evidence and never goes back.
func TestPropSinceMeansSince(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		stepsOf(genEvents(t, 30), func(before State, e *Event, after State) {
			if after.Activity == before.Activity && before.Events > 0 &&
				(!after.ActivityUpdatedAt.Equal(before.ActivityUpdatedAt) || after.ActivitySource != before.ActivitySource) {
				t.Fatalf("%s moved %s from %v to %v", e.Type, after.Activity, before.ActivityUpdatedAt, after.ActivityUpdatedAt)
			}
			if after.LastEvidenceAt.Before(before.LastEvidenceAt) {
				t.Fatal("last_evidence_at went back")
			}
			moved := !after.LastEvidenceAt.Equal(before.LastEvidenceAt)
			if moved && !evidenceTypes[e.Type] {
				t.Fatalf("%s is not agent activity but moved last_evidence_at", e.Type)
			}
			if evidenceTypes[e.Type] && !after.LastEvidenceAt.Equal(maxTime(before.LastEvidenceAt, e.TS)) {
				t.Fatalf("%s at %v left last_evidence_at at %v", e.Type, e.TS, after.LastEvidenceAt)
			}
			if after.Activity != ActivityNeedsInput && after.WaitingOn != "" {
				t.Fatalf("waiting on %q while %s", after.WaitingOn, after.Activity)
			}
			if after.Activity == ActivityNeedsInput && after.WaitingOn == "" {
				t.Fatal("needs_input without waiting_on")
			}
		})
	})
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// genRoster draws the states of a roster: top-level sessions, children and
// grandchildren (some of whose parents are missing), in any activity.
func genRoster(t *rapid.T) []State {
	n := rapid.IntRange(0, 12).Draw(t, "sessions")
	ids := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"}
	out := make([]State, 0, n)
	for i := 0; i < n; i++ {
		parent := ""
		if i > 0 && rapid.IntRange(0, 2).Draw(t, "is_child") > 0 {
			parent = rapid.SampledFrom(append(ids[:i:i], "missing")).Draw(t, "parent")
		}
		a := rapid.SampledFrom([]Activity{ActivityUnknown, ActivityWorking, ActivityNeedsInput, ActivityIdle}).Draw(t, "activity")
		s := rosterState(ids[i], parent, rapid.SampledFrom([]string{"", "Flint", "Mica"}).Draw(t, "name"), a,
			rapid.IntRange(0, 5).Draw(t, "since"), "")
		if a == ActivityNeedsInput {
			s.WaitingOn = rapid.SampledFrom([]string{"Bash", "question"}).Draw(t, "waiting_on")
		}
		s.Ended = a == ActivityIdle && rapid.Bool().Draw(t, "ended")
		out = append(out, s)
	}
	return rapid.Permutation(out).Draw(t, "order")
}

// SurfaceChildren never changes a subagent row, never changes a top-level
// session's own needs_input, surfaces every waiting descendant of a live
// top-level session, and is idempotent.
func TestPropSurfaceChildren(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genRoster(t)
		out := slices.Clone(in)
		SurfaceChildren(out)
		byID := map[string]State{}
		for _, s := range in {
			byID[s.SessionID] = s
		}
		for i := range in {
			switch {
			case in[i].ParentSessionID != "":
				stateDiff(t, "a subagent row", out[i], in[i])
			case in[i].Activity == ActivityNeedsInput:
				stateDiff(t, "a session waiting on its own input", out[i], in[i])
			case out[i].WaitingChild != "":
				c, ok := byID[out[i].WaitingChild]
				if !ok || c.Activity != ActivityNeedsInput || out[i].Activity != ActivityNeedsInput || in[i].Ended {
					t.Fatalf("surfaced %+v from %+v", out[i], c)
				}
				// The named child descends from this session.
				for p, hops := c, 0; p.ParentSessionID != ""; hops++ {
					if hops > len(in) {
						t.Fatal("loop")
					}
					p = byID[p.ParentSessionID]
					if p.ParentSessionID == "" && p.SessionID != in[i].SessionID {
						t.Fatalf("%s surfaced on %s, not its top-level %s", c.SessionID, in[i].SessionID, p.SessionID)
					}
				}
			default:
				stateDiff(t, "a top-level row without a waiting descendant", out[i], in[i])
				// No live descendant waits.
				for _, c := range in {
					if c.Activity != ActivityNeedsInput || c.ParentSessionID == "" || in[i].Ended {
						continue
					}
					p, hops := c, 0
					for p.ParentSessionID != "" && hops <= len(in) {
						next, ok := byID[p.ParentSessionID]
						if !ok {
							break
						}
						p, hops = next, hops+1
					}
					if p.SessionID == in[i].SessionID {
						t.Fatalf("%s waits under %s, which does not show it", c.SessionID, p.SessionID)
					}
				}
			}
		}
		again := slices.Clone(out)
		SurfaceChildren(again)
		for i := range out {
			stateDiff(t, "a second pass", again[i], out[i])
		}
	})
}
