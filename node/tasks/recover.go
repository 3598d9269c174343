package tasks

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/runtime"
)

// Recovered is what Recover closed.
type Recovered struct {
	Sessions []string // presence sessions ended with reason node_restart
	Tasks    []string // tasks made terminal in the runtime ledger
}

// Recover closes what the node's previous run left open. Runtime sessions
// are memory-only and are not resumed after a restart, so at start every
// live presence session of agent harn that this node hosted (live is the
// node's own live sessions) is ended with reason node_restart, and every
// task whose last state in the runtime ledger is not terminal gets a
// terminal record (status failed, reason node_restart). Call it once, at
// start, before any session is opened.
func (h *Host) Recover(live []presence.State) (Recovered, error) {
	var out Recovered
	var errs []error
	now := h.cfg.Clock.Now()
	for i := range live {
		st := &live[i]
		if st.Agent != Agent || st.Ended || h.Hosts(st.SessionID) {
			continue
		}
		if st.Node != "" && h.cfg.Node != "" && st.Node != h.cfg.Node {
			continue
		}
		err := h.emit(presence.Event{SessionID: st.SessionID, Type: presence.TypeSessionEnd, TS: now, Agent: Agent,
			Attrs: map[string]any{presence.AttrReason: ReasonNodeRestart}})
		if err != nil {
			errs = append(errs, fmt.Errorf("tasks: end session %s: %w", st.SessionID, err))
			continue
		}
		out.Sessions = append(out.Sessions, st.SessionID)
	}
	open, err := h.openTasks()
	if err != nil {
		errs = append(errs, err)
	}
	l := NewLedger(h.cfg.KV)
	for _, o := range open {
		// A call the node's death cut short settles first: one that ran
		// (its tool process died with the node, or outlived it) as
		// outcome_unknown, which holds the session's mutations until
		// `harn task ack` when it was mutating; one that waited for a
		// confirmation, never run, as denied.
		for _, c := range o.calls {
			o.seq++
			st := runtime.OutcomeUnknown
			if c.pending {
				st = runtime.OutcomeDenied
			}
			r := runtime.Record{V: runtime.RecordVersion, Seq: o.seq, TS: now, Session: o.session, Task: o.task, Kind: runtime.RecEnd,
				Call: c.id, Capability: c.capability, Status: string(st), ReadOnly: c.readOnly, Reason: ReasonNodeRestart}
			if err := l.Append(r); err != nil {
				errs = append(errs, fmt.Errorf("tasks: settle call %s of task %s: %w", c.id, o.task, err))
			}
		}
		r := runtime.Record{V: runtime.RecordVersion, Seq: o.seq + 1, TS: now, Session: o.session, Task: o.task, Kind: runtime.RecState,
			State: runtime.StateTerminal, Status: string(runtime.StatusFailed), Reason: ReasonNodeRestart}
		if err := l.Append(r); err != nil {
			errs = append(errs, fmt.Errorf("tasks: close task %s: %w", o.task, err))
			continue
		}
		out.Tasks = append(out.Tasks, o.task)
	}
	sort.Strings(out.Sessions)
	sort.Strings(out.Tasks)
	if len(out.Sessions)+len(out.Tasks) > 0 {
		h.log.Info("closed what the previous run left open", "sessions", len(out.Sessions), "tasks", len(out.Tasks))
	}
	return out, errors.Join(errs...)
}

// openTask is a task of the runtime ledger whose last state is not
// terminal, with its calls that never settled, in the order they began.
type openTask struct {
	task, session string
	seq           uint64
	calls         []openCall
}

// openCall is a call begun and not ended: running, or pending a
// confirmation.
type openCall struct {
	id, capability    string
	readOnly, pending bool
}

// openTasks scans the runtime ledger for the tasks whose last record
// leaves them open. A record that does not decode is skipped (and
// logged): one bad record must not keep the node from starting.
func (h *Host) openTasks() ([]openTask, error) {
	type last struct {
		session  string
		seq      uint64
		terminal bool
		calls    []openCall
	}
	byTask := map[string]*last{}
	var order []string
	err := h.cfg.KV.ScanKV(Space, nil, func(_, v []byte) error {
		r, err := runtime.DecodeRecord(v)
		if err != nil {
			h.log.Warn("runtime ledger record does not decode", "err", err)
			return nil
		}
		t := byTask[r.Task]
		if t == nil {
			t = &last{}
			byTask[r.Task] = t
			order = append(order, r.Task)
		}
		if r.Seq >= t.seq {
			t.seq = r.Seq
		}
		if r.Session != "" {
			t.session = r.Session
		}
		switch r.Kind {
		case runtime.RecState:
			t.terminal = r.State == runtime.StateTerminal
		case runtime.RecBegin:
			if r.Call != "" {
				t.calls = append(t.calls, openCall{id: r.Call, capability: r.Capability, readOnly: r.ReadOnly, pending: r.Status == "pending"})
			}
		case runtime.RecConfirm:
			for i := range t.calls {
				if t.calls[i].id == r.Call {
					t.calls[i].pending = false
				}
			}
		case runtime.RecEnd:
			t.calls = slices.DeleteFunc(t.calls, func(c openCall) bool { return c.id == r.Call })
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("tasks: scan the runtime ledger: %w", err)
	}
	var out []openTask
	for _, id := range order {
		if t := byTask[id]; !t.terminal {
			out = append(out, openTask{task: id, session: t.session, seq: t.seq, calls: t.calls})
		}
	}
	return out, nil
}
