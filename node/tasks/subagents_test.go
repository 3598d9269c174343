package tasks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/subagent"
	"github.com/harn-dev/harn/util/clock"
)

// eventSink keeps what the host ingests.
type eventSink struct {
	mu  sync.Mutex
	evs []presence.Event
}

func (s *eventSink) Ingest(evs []presence.Event) error {
	s.mu.Lock()
	s.evs = append(s.evs, evs...)
	s.mu.Unlock()
	return nil
}

func (s *eventSink) all() []presence.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]presence.Event(nil), s.evs...)
}

const childMark = "CHILD-TRANSCRIPT-MARK"

// isChild tells a child's request from its parent's: the child's system
// prompt says it is a subagent.
func isChild(req map[string]any) bool {
	b, _ := json.Marshal(req["messages"])
	return bytes.Contains(b, []byte("You are a subagent"))
}

func hasToolResult(req map[string]any) bool {
	for _, m := range modeltest.Messages(req) {
		if strings.HasPrefix(m, "tool:") {
			return true
		}
	}
	return false
}

// TestTwentyParallelSubagentsSixteenAtOnce: the parent's model asks for 20
// subagents in one step; at most 16 children's model calls are in flight
// at once (the first 16 are held until all 16 are), the other 4 wait and
// then run, and the parent's next request carries 20 validated handoffs
// and nothing of the children's transcripts.
func TestTwentyParallelSubagentsSixteenAtOnce(t *testing.T) {
	sink := &eventSink{}
	h, err := New(Config{Node: "n1", KV: &memKV{}, Key: bytes.Repeat([]byte{7}, 32), Clock: clock.Real{}, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	var (
		mu              sync.Mutex
		inflight, peak  int
		queuedAtPeak    = -1
		gate            = make(chan struct{})
		gateOnce        sync.Once
		parentID        string
		parentSawResult bool
	)
	srv := modeltest.New(t)
	srv.SetFallback(func(req map[string]any) modeltest.Reply {
		return modeltest.Reply{Func: func(req map[string]any) modeltest.Reply {
			if !isChild(req) {
				if hasToolResult(req) {
					mu.Lock()
					parentSawResult = true
					mu.Unlock()
					return modeltest.Text("all twenty handed off")
				}
				var calls []modeltest.Call
				for i := range 20 {
					calls = append(calls, modeltest.Call{ID: fmt.Sprintf("a%d", i), Name: subagent.ToolAgent,
						Args: fmt.Sprintf(`{"profile":"explorer","brief":"look at part %d"}`, i)})
				}
				return modeltest.Calls(true, calls...)
			}
			if hasToolResult(req) {
				return modeltest.Text(childMark + " finished")
			}
			mu.Lock()
			inflight++
			peak = max(peak, inflight)
			if inflight == subagent.MaxRunning {
				queued := 0
				for _, c := range h.Subagents().Children(parentID) {
					if c.State == subagent.StateQueued {
						queued++
					}
				}
				queuedAtPeak = queued
				gateOnce.Do(func() { close(gate) })
			}
			mu.Unlock()
			select {
			case <-gate:
			case <-time.After(60 * time.Second): // bounded: a failure, not a wait for something to not happen
			}
			mu.Lock()
			inflight--
			mu.Unlock()
			return modeltest.Calls(true, modeltest.Call{ID: "h1", Name: subagent.ToolHandoff,
				Args: `{"status":"done","changes":[],"verification":"read it: fine","unresolved":[]}`})
		}}
	})
	dir := t.TempDir()
	id, err := h.OpenHarn(HarnOptions{URL: srv.URL(), Model: "test-model", Key: "k"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	parentID = id
	mu.Unlock()
	v, err := h.rt.Start(id, runtime.Request{Text: "fan out", Grants: []runtime.Grant{{Level: runtime.Execute, Capability: "*"}, {Level: runtime.Execute, Capability: "agent"}}})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		tv, err := h.rt.Task(v.ID)
		if err == nil && tv.State == runtime.StateTerminal {
			if tv.Status != runtime.StatusSucceeded {
				t.Fatalf("parent task %+v", tv)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the parent's task did not end: %+v %v", tv, err)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, bounded by the deadline
	}
	mu.Lock()
	defer mu.Unlock()
	if peak != subagent.MaxRunning || queuedAtPeak != 4 || !parentSawResult {
		t.Fatalf("peak %d in flight (want %d), %d queued at the peak (want 4), parent saw results %v", peak, subagent.MaxRunning, queuedAtPeak, parentSawResult)
	}
	var last map[string]any
	for _, r := range srv.Requests() {
		if !isChild(r) {
			last = r
		}
	}
	raw, _ := json.Marshal(last)
	if n := bytes.Count(raw, []byte(`\"outcome\":\"valid\"`)); n != 20 {
		t.Fatalf("%d validated handoffs reached the parent, want 20: %s", n, raw)
	}
	for _, r := range srv.Requests() {
		if isChild(r) {
			continue
		}
		b, _ := json.Marshal(r)
		if bytes.Contains(b, []byte(childMark)) || bytes.Contains(b, []byte("look at part")) && bytes.Contains(b, []byte("You are an explorer")) {
			t.Fatalf("a child's transcript reached the parent: %s", b)
		}
	}
	starts, stops := 0, 0
	for _, e := range sink.all() {
		switch {
		case e.Type == presence.TypeSubagentStart && e.ParentSessionID == id:
			starts++
		case e.Type == presence.TypeSubagentStop && e.ParentSessionID == id && e.AttrString(presence.AttrReason) == "handoff_valid":
			stops++
		}
	}
	if starts != 20 || stops != 20 {
		t.Fatalf("%d subagent.start and %d subagent.stop with the parent", starts, stops)
	}
}

// TestAChildsApprovalWaitRollsUpToItsParent: a child inherits its
// parent's confirm condition on read; its call waits for a confirmation
// (interaction.input_requested on the child's session), and the roster's
// fold shows the wait on the parent's row, naming the child.
func TestAChildsApprovalWaitRollsUpToItsParent(t *testing.T) {
	_, sink, id, _, child := childWaitingForConfirmation(t)
	byID := presence.FoldSessions(sink.all())
	states := []presence.State{byID[id], byID[child]}
	if states[1].ParentSessionID != id {
		t.Fatalf("the child's row has parent %q, want %q", states[1].ParentSessionID, id)
	}
	presence.SurfaceChildren(states)
	if states[0].Activity != presence.ActivityNeedsInput || states[0].WaitingChild != child {
		t.Fatalf("the parent's row: activity %s, waiting child %q (want %s)", states[0].Activity, states[0].WaitingChild, child)
	}
}

// childWaitingForConfirmation starts a harn session whose task (agent,
// and read under confirmation) asks an explorer child to read a file, and
// waits, bounded, until the child's read asks for a confirmation.
func childWaitingForConfirmation(t *testing.T) (h *Host, sink *eventSink, id, parentTask, child string) {
	t.Helper()
	sink = &eventSink{}
	h, err := New(Config{Node: "n1", KV: &memKV{}, Key: bytes.Repeat([]byte{7}, 32), Clock: clock.Real{}, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	srv := modeltest.New(t)
	srv.SetFallback(func(map[string]any) modeltest.Reply {
		return modeltest.Reply{Func: func(req map[string]any) modeltest.Reply {
			if !isChild(req) {
				return modeltest.Calls(true, modeltest.Call{ID: "a1", Name: subagent.ToolAgent, Args: `{"profile":"explorer","brief":"read x"}`})
			}
			return modeltest.Calls(true, modeltest.Call{ID: "r1", Name: "read", Args: `{"path":"x"}`})
		}}
	})
	id, err = h.OpenHarn(HarnOptions{URL: srv.URL(), Model: "test-model", Key: "k"}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pv, err := h.rt.Start(id, runtime.Request{Text: "ask a child", Grants: []runtime.Grant{
		{Level: runtime.Execute, Capability: subagent.ToolAgent}, {Level: runtime.Execute, Capability: "read", Confirm: true}}})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for child == "" {
		for _, e := range sink.all() {
			if e.Type == presence.TypeInputRequested && e.SessionID != id {
				child = e.SessionID
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the child's call never asked for a confirmation")
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, bounded by the deadline
	}
	return h, sink, id, pv.ID, child
}

// waitTaskDone polls a task until it is terminal and succeeded (bounded).
func waitTaskDone(t *testing.T, h *Host, task string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		tv, err := h.rt.Task(task)
		if err == nil && tv.State == runtime.StateTerminal {
			if tv.Status != runtime.StatusSucceeded {
				t.Fatalf("task %s: %+v", task, tv)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s did not end: %+v %v", task, tv, err)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, bounded by the deadline
	}
}

// TestAChildsLaneForksOnlyTheSystemPrefix: a child's context is a lane
// of its parent's tree forked at the end of the system prefix: its first
// request carries the repository instructions and the brief and none of
// the parent's turns; the parent's lane is unchanged by it; and the store
// holds no copy (the child's items are its fork record and its own
// messages, in the parent's tree).
func TestAChildsLaneForksOnlyTheSystemPrefix(t *testing.T) {
	const (
		instrMark  = "INSTR-MARK keep tests green"
		turnMark   = "PARENT-TURN-MARK"
		answerMark = "PARENT-ANSWER-MARK"
		briefMark  = "BRIEF-MARK look at the parser"
	)
	kv := &memKV{}
	h, err := New(Config{Node: "n1", KV: kv, Key: bytes.Repeat([]byte{7}, 32), Clock: clock.Real{}, Sink: &eventSink{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	var (
		mu        sync.Mutex
		childReqs []map[string]any
	)
	srv := modeltest.New(t)
	srv.SetFallback(func(map[string]any) modeltest.Reply {
		return modeltest.Reply{Func: func(req map[string]any) modeltest.Reply {
			ms := modeltest.Messages(req)
			switch {
			case isChild(req):
				mu.Lock()
				childReqs = append(childReqs, req)
				mu.Unlock()
				return modeltest.Calls(true, modeltest.Call{ID: "h1", Name: subagent.ToolHandoff,
					Args: `{"status":"done","changes":[],"verification":"looked: fine","unresolved":[]}`})
			case hasToolResult(req):
				return modeltest.Text("the child handed off")
			case modeltest.Contains(ms, "spawn one"):
				return modeltest.Calls(true, modeltest.Call{ID: "a1", Name: subagent.ToolAgent,
					Args: `{"profile":"explorer","brief":"` + briefMark + `"}`})
			default:
				return modeltest.Text(answerMark)
			}
		}}
	})
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte(instrMark+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	id, err := h.OpenHarn(HarnOptions{URL: srv.URL(), Model: "test-model", Key: "k"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	grants := []runtime.Grant{{Level: runtime.Execute, Capability: "*"}, {Level: runtime.Execute, Capability: subagent.ToolAgent}}
	v, err := h.rt.Start(id, runtime.Request{Text: turnMark + " say hello", Grants: grants})
	if err != nil {
		t.Fatal(err)
	}
	waitTaskDone(t, h, v.ID)
	parent, err := h.contexts.Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	before := parent.History()
	v, err = h.rt.FollowUp(id, runtime.Request{Text: "spawn one", Grants: grants})
	if err != nil {
		t.Fatal(err)
	}
	waitTaskDone(t, h, v.ID)

	mu.Lock()
	reqs := append([]map[string]any(nil), childReqs...)
	mu.Unlock()
	if len(reqs) == 0 {
		t.Fatal("the child made no request")
	}
	first := modeltest.Messages(reqs[0])
	raw, _ := json.Marshal(reqs[0]["messages"])
	if !modeltest.Contains(first, instrMark) || !modeltest.Contains(first, briefMark) {
		t.Fatalf("the child's first request lacks the system prefix or the brief: %q", first)
	}
	if bytes.Contains(raw, []byte(turnMark)) || bytes.Contains(raw, []byte(answerMark)) || bytes.Contains(raw, []byte("spawn one")) {
		t.Fatalf("the child's first request carries the parent's turns: %s", raw)
	}

	// The parent's lane: the first turn as it was, then its own second turn;
	// nothing of the child's.
	after := parent.History()
	if len(after) < len(before) {
		t.Fatalf("the parent's history shrank: %d -> %d", len(before), len(after))
	}
	for i := range before {
		if after[i].Role != before[i].Role || after[i].Text != before[i].Text {
			t.Fatalf("the parent's message %d changed: %+v -> %+v", i, before[i], after[i])
		}
	}
	for _, m := range after {
		if strings.Contains(m.Text, briefMark) && m.Role == "user" {
			t.Fatalf("the child's brief is in the parent's lane: %+v", m)
		}
	}

	// The store: the child's session maps to a lane of the parent's tree;
	// it has no tree of its own; its items are one fork record and its
	// own messages, none a copy of the parent's.
	child := ""
	for _, c := range h.Subagents().Children(id) {
		child = c.ID
	}
	if child == "" {
		t.Fatal("no child recorded")
	}
	var sess struct{ Tree, Lane string }
	var forks, own int
	err = kv.ScanKV(contextSpace, nil, func(k, val []byte) error {
		key := string(k)
		switch {
		case key == "s/"+child:
			return json.Unmarshal(val, &sess)
		case strings.HasPrefix(key, "t/"+child+"/"):
			t.Errorf("the child has a tree of its own: %q", key)
		case strings.HasPrefix(key, "t/"+id+"/n/"):
			var it struct {
				Lane string          `json:"lane"`
				Kind string          `json:"kind"`
				Msg  json.RawMessage `json:"msg"`
				Text string          `json:"text"`
			}
			if err := json.Unmarshal(val, &it); err != nil {
				return err
			}
			if it.Lane != child {
				return nil
			}
			switch it.Kind {
			case "lane":
				forks++
			case "budget": // the child's own budget line
			case "message":
				own++
				if bytes.Contains(it.Msg, []byte(turnMark)) || bytes.Contains(it.Msg, []byte(answerMark)) {
					t.Errorf("a parent's message was copied into the child's lane: %s", it.Msg)
				}
			default:
				t.Errorf("the child's lane stored a %s item (a copy of the prefix?): %s", it.Kind, val)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if sess.Tree != id || sess.Lane != child {
		t.Fatalf("the child's session record %+v, want tree %s lane %s", sess, id, child)
	}
	if forks != 1 || own == 0 {
		t.Fatalf("the child's lane: %d fork records (want 1), %d messages of its own", forks, own)
	}
}

// TestAReductionOfTheParentsTaskReducesItsRunningChild: the operator
// reduces the parent's task (harn task reduce) while its child runs; the
// child's running task and the grants its follow-ups take are reduced
// alike, so the child never holds more than its parent.
func TestAReductionOfTheParentsTaskReducesItsRunningChild(t *testing.T) {
	h, _, _, parentTask, child := childWaitingForConfirmation(t)
	ct, ok := h.rt.ActiveTask(child)
	if !ok {
		t.Fatal("the child has no running task")
	}
	if _, err := h.Do(Action{Op: OpReduce, Task: parentTask, Capability: "read", Level: "discover", Reason: "stop reading"}); err != nil {
		t.Fatal(err)
	}
	g, err := h.rt.Grants(ct)
	if err != nil {
		t.Fatal(err)
	}
	for _, held := range g.Ceiling {
		if lv, _ := runtime.ParseLevel(held.Level); held.Capability == "read" && lv > runtime.Discover {
			t.Errorf("the child's running task still holds read at %v: %+v", held.Level, g)
		}
	}
	reduced := false
	for _, l := range g.Limits {
		reduced = reduced || (l.Capability == "read" && l.Level == runtime.Discover)
	}
	if !reduced {
		t.Errorf("the child's running task has no limit on read: %+v", g)
	}
	h.kids.mu.Lock()
	next := slices.Clone(h.kids.grants[child])
	h.kids.mu.Unlock()
	for _, x := range next {
		if x.Capability == "read" && x.Level > runtime.Discover {
			t.Errorf("the child's follow-ups would take read at %v: %+v", x.Level, next)
		}
	}
}
