package tasks

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/agent"
	"github.com/harn-dev/harn/util/clock"
)

// TestASteerDuringTheFinalModelCallModifiesTheTaskInPlace (seed 001:
// Enter modifies the active task in place; the model restarts around the
// new message): the model's final call blocks until a steer is sent; the
// call is abandoned (or its answer kept as said) and the model is asked
// again, within the same task, with the steer as the newest message. No
// follow-up task is made; the task's end is the restarted call's answer.
func TestASteerDuringTheFinalModelCallModifiesTheTaskInPlace(t *testing.T) {
	h, err := New(Config{Node: "n1", KV: &memKV{}, Key: bytes.Repeat([]byte{7}, 32), Clock: clock.Real{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	hold := make(chan struct{})
	final := modeltest.Text("FIRST-FINAL-ANSWER")
	final.Hold = hold
	srv := modeltest.New(t, final, modeltest.Text("SECOND-FINAL"))
	id, err := h.OpenHarn(HarnOptions{URL: srv.URL(), Model: "test-model", Key: "k"}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a, err := h.rt.Start(id, runtime.Request{Text: "PROMPT-A", Grants: []runtime.Grant{{Level: runtime.Execute, Capability: "*"}}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-srv.Arrived(): // the final call streams its first chunk, then blocks
	case <-time.After(30 * time.Second):
		t.Fatal("no model call")
	}
	hs := h.lookup(id)
	r, err := hs.ag.Steer(a.ID, "STEER-TEXT")
	close(hold) // the blocked call may now end: the steer is sent
	if err != nil || r.Mode != agent.SteerQueued || r.Task != a.ID {
		t.Fatalf("steer: %+v %v", r, err)
	}
	waitTaskDone(t, h, a.ID)
	var end *agent.Event
	steeredAway := false
	for _, e := range hs.harn.since(context.Background(), a.ID, 0, 0) {
		if e.Type == agent.EvTurnEnd {
			e := e
			end = &e
		}
		if e.Type == agent.EvSteer && e.Status == string(agent.SteerFollowUp) {
			steeredAway = true
		}
	}
	if end == nil || end.Text != "SECOND-FINAL" || steeredAway {
		t.Fatalf("the task ended %+v (steer made a follow-up: %v); want it to end with the restarted call's answer", end, steeredAway)
	}
	raw := srv.Raw()
	if len(raw) != 2 {
		t.Fatalf("%d model requests, want 2 (the abandoned call, the restart)", len(raw))
	}
	if i, j := strings.Index(raw[1], "PROMPT-A"), strings.Index(raw[1], "STEER-TEXT"); i < 0 || j < i {
		t.Fatalf("the restarted request lacks the prompt then the steer: %s", raw[1])
	}
	if sv, err := h.rt.Session(id); err != nil || sv.Task != nil || sv.Last == nil || sv.Last.ID != a.ID || len(sv.Queue) != 0 {
		t.Fatalf("session %+v %v: want task %s last, nothing queued", sv, err, a.ID)
	}
}
