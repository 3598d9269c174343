package tasks

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/presence/adapter/all"
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/util/text"
)

// ViewSpace is the keyspace of what `harn task show` prints beyond the
// ledger: a task's text (clipped) and its last keepOutputs messages (each
// clipped to outputChars), in a ring of keepOutputs slots per task. The
// runtime ledger holds digests only, so the output so far of a task the
// node's death cut short lives here.
const ViewSpace = "taskview"

// Keys of ViewSpace: <task>\x00 't' for the text, <task>\x00 'o' <slot>
// for a message.
const (
	viewText   = 't'
	viewOutput = 'o'
	viewHeld   = 'h' // the latest message, not yet settled ("" once it is)
)

// viewMsg is one stored message: N orders the ring.
type viewMsg struct {
	N    int    `json:"n"`
	Text string `json:"text"`
}

func viewKey(task string, kind byte, slot int) []byte {
	k := append([]byte(task), 0, kind)
	if kind == viewOutput {
		k = append(k, byte(slot))
	}
	return k
}

// storeText keeps a task's text across a restart (logged on failure: a
// view is never worth refusing the task).
func (h *Host) storeText(task, t string) {
	if validTask(task) != nil {
		return
	}
	if err := h.cfg.KV.PutKV(ViewSpace, viewKey(task, viewText, 0), []byte(t)); err != nil {
		h.log.Warn("task text not stored", "task", task, "err", err)
	}
}

// storeOutput keeps the task's n-th message (from 0) in its ring.
func (h *Host) storeOutput(task string, n int, msg string) {
	if validTask(task) != nil {
		return
	}
	b, _ := json.Marshal(viewMsg{N: n, Text: msg})
	if err := h.cfg.KV.PutKV(ViewSpace, viewKey(task, viewOutput, n%keepOutputs), b); err != nil {
		h.log.Warn("task output not stored", "task", task, "err", err)
	}
}

// storeHeld keeps the task's held message ("" clears it).
func (h *Host) storeHeld(task, msg string) {
	if validTask(task) != nil {
		return
	}
	if err := h.cfg.KV.PutKV(ViewSpace, viewKey(task, viewHeld, 0), []byte(msg)); err != nil {
		h.log.Warn("task output not stored", "task", task, "err", err)
	}
}

// storedView reads back a task's text and messages, oldest first.
func (h *Host) storedView(task string) (string, []string, error) {
	var t, held string
	var msgs []viewMsg
	err := h.cfg.KV.ScanKV(ViewSpace, append([]byte(task), 0), func(k, v []byte) error {
		if len(k) < len(task)+2 {
			return nil
		}
		switch k[len(task)+1] {
		case viewText:
			t = text.Clip(string(v), briefTextLen)
		case viewHeld:
			held = text.Clip(string(v), outputChars)
		case viewOutput:
			var m viewMsg
			if json.Unmarshal(v, &m) == nil {
				m.Text = text.Clip(m.Text, outputChars)
				msgs = append(msgs, m)
			}
		}
		return nil
	})
	sort.Slice(msgs, func(i, j int) bool { return msgs[i].N < msgs[j].N })
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, m.Text)
	}
	if held != "" {
		out = append(out, held)
	}
	if len(out) > keepOutputs {
		out = out[len(out)-keepOutputs:]
	}
	return t, out, err
}

// Rebuilt is what Rebuild put back.
type Rebuilt struct {
	Tasks       int // ended tasks restored for views
	Interrupted int // of those, tasks the restart cut short
	Holds       int // unknown-outcome holds restored
	Refusing    int // external sessions whose cancelled task refuses their calls again
}

// Rebuild restores the node's task records from the runtime ledger: every
// task (the newest keepTasks, and every task that still holds an
// unacknowledged unknown outcome) is put back into the runtime as ended,
// with its text and output so far from ViewSpace, so that `harn task show`
// answers for it. A task whose run the restart cut short (its last state
// is terminal with reason node_restart, as Recover leaves it, or is not
// terminal at all) is interrupted. A task cancelled while it ran whose
// refusal had not lifted (no task.lift) refuses its live external
// session's calls again, and the session is attached. Holds refuse the mutations of the
// session's next tasks until `harn task ack`. live is the node's live
// sessions: an external agent's session keeps its agent's catalog. Call it
// once, at start, after Recover and before anything is served.
func (h *Host) Rebuild(live []presence.State) (Rebuilt, error) {
	var out Rebuilt
	rs, err := RebuildRecords(h.cfg.KV, h.log.Warn)
	if err != nil {
		return out, err
	}
	if n := len(rs) - keepTasks; n > 0 {
		keep := rs[:0]
		for i, r := range rs {
			if i >= n || len(r.Holds) > 0 {
				keep = append(keep, r)
			}
		}
		rs = keep
	}
	cwd := map[string]presence.State{}
	for _, st := range live {
		cwd[st.SessionID] = st
	}
	var errs []error
	for _, r := range rs {
		cfg := runtime.SessionConfig{Catalog: all.RestoredCatalog}
		if st, ok := cwd[r.Session]; ok {
			cfg = runtime.SessionConfig{Catalog: catalogOf(st.Agent), Workdir: st.Cwd}
		}
		if err := h.rt.Restore(r, cfg); err != nil {
			errs = append(errs, fmt.Errorf("tasks: restore %s: %w", r.ID, err))
			continue
		}
		t, msgs, err := h.storedView(r.ID)
		if err != nil {
			h.log.Warn("task view not read back", "task", r.ID, "err", err)
		}
		h.mu.Lock()
		if _, ok := h.texts[r.ID]; !ok {
			h.order = append(h.order, r.ID)
		}
		h.texts[r.ID] = t
		if len(msgs) > 0 {
			h.outputs[r.ID] = msgs
			h.outN[r.ID] = len(msgs)
		}
		h.mu.Unlock()
		if st, ok := cwd[r.Session]; ok && r.Cancel != nil && st.Agent != Agent && !st.Ended && h.cfg.Sessions != nil {
			// An external agent's session whose task was cancelled while it
			// ran, its turn not over: the host answers its hooks again, so
			// that the rebuilt refusal refuses its next call.
			if _, err := h.attach(r.Session); err != nil {
				errs = append(errs, fmt.Errorf("tasks: reattach %s for %s's cancellation: %w", r.Session, r.ID, err))
			} else {
				out.Refusing++
			}
		}
		out.Tasks++
		out.Holds += len(r.Holds)
		if r.Interrupted != "" {
			out.Interrupted++
		}
	}
	if out.Tasks > 0 {
		h.log.Info("task records rebuilt from the ledger", "tasks", out.Tasks, "interrupted", out.Interrupted, "holds", out.Holds)
	}
	return out, errors.Join(errs...)
}

// RebuildRecords folds the runtime ledger on kv into one Restored per task,
// oldest submission first. A record that does not decode is skipped (and
// reported to warn): one bad record must not keep the node from starting.
func RebuildRecords(kv KV, warn func(msg string, args ...any)) ([]runtime.Restored, error) {
	byTask := map[string]*runtime.Restored{}
	var order []string
	terminal := map[string]bool{}
	err := kv.ScanKV(Space, nil, func(_, v []byte) error {
		rec, err := runtime.DecodeRecord(v)
		if err != nil {
			if warn != nil {
				warn("runtime ledger record does not decode", "err", err)
			}
			return nil
		}
		r := byTask[rec.Task]
		if r == nil {
			r = &runtime.Restored{ID: rec.Task, Created: rec.TS}
			byTask[rec.Task] = r
			order = append(order, rec.Task)
		}
		if rec.Seq > r.Seq {
			r.Seq = rec.Seq
		}
		if r.Session == "" {
			r.Session = rec.Session
		}
		switch rec.Kind {
		case runtime.RecSubmit:
			r.Action, r.By, r.Created = runtime.Action(rec.Status), rec.By, rec.TS
		case runtime.RecState:
			terminal[rec.Task] = rec.State == runtime.StateTerminal
			if rec.State == runtime.StateTerminal {
				r.Status = runtime.Status(rec.Status)
				r.Interrupted = ""
				if rec.Reason == ReasonNodeRestart {
					r.Interrupted = ReasonNodeRestart
				}
			}
		case runtime.RecEnd:
			if rec.Status == string(runtime.OutcomeUnknown) && !rec.ReadOnly {
				r.Holds = append(r.Holds, runtime.RestoredHold{Call: rec.Call, Capability: rec.Capability})
			}
		case runtime.RecRefused:
			r.Refused++
			if len(r.RefusedCalls) < runtime.MaxRefusedCalls {
				r.RefusedCalls = append(r.RefusedCalls, runtime.RefusedCall{Capability: text.Clip(rec.Capability, runtime.MaxByBytes), Check: rec.Status})
			}
		case runtime.RecAck:
			r.Holds = nil
		case runtime.RecCancel:
			r.Cancel = &runtime.RestoredCancel{Status: runtime.Status(rec.Status), By: rec.By, Reason: rec.Reason}
		case runtime.RecLift:
			r.Cancel = nil
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("tasks: scan the runtime ledger: %w", err)
	}
	out := make([]runtime.Restored, 0, len(order))
	for _, id := range order {
		r := byTask[id]
		if !terminal[id] { // Recover could not close it: it was cut short all the same
			r.Status, r.Interrupted = runtime.StatusFailed, ReasonNodeRestart
		}
		out = append(out, *r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out, nil
}
