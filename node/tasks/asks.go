package tasks

import (
	"sort"
	"time"

	"github.com/harn-dev/harn/node/callfacts"
	"github.com/harn-dev/harn/node/tasks/taskwire"
)

// A harn task's call that waits for `harn task confirm` is an approval
// like an agent's permission request: the operator sees what it asks
// before answering. The host keeps, for each confirmation it asked, the
// call's facts (read from the call's own input by node/callfacts) in
// memory, bounded; the runtime's pending calls decide which are open.
// The facts never enter presence or the registry.

// maxAsks bounds the confirmations whose facts the host keeps; past it
// the oldest goes (its confirmation is then listed without them).
const maxAsks = 256

// askKey names a confirmation: its task and call.
type askKey struct{ task, call string }

// asked is a kept confirmation; seq orders the notes (the oldest goes
// first, and a listing forgets only what was noted before it began).
type asked struct {
	req Request
	seq uint64
}

// noteAsk keeps what a confirmation asks.
func (h *Host) noteAsk(r Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.asks == nil {
		h.asks = map[askKey]asked{}
	}
	k := askKey{r.Task, r.Call}
	if _, ok := h.asks[k]; !ok && len(h.asks) >= maxAsks {
		var oldest askKey
		first := true
		for k, a := range h.asks {
			if first || a.seq < h.asks[oldest].seq {
				oldest, first = k, false
			}
		}
		delete(h.asks, oldest)
	}
	h.askSeq++
	h.asks[k] = asked{req: r, seq: h.askSeq}
}

// dropAsk forgets a confirmation once answered.
func (h *Host) dropAsk(task, call string) {
	h.mu.Lock()
	delete(h.asks, askKey{task, call})
	h.mu.Unlock()
}

// confirmationOf is the request of a call of session that waits for its
// confirmation: tool and input as the call gave them, its facts.
func (h *Host) confirmationOf(session, task, call, tool string, f taskwire.Facts, detail string, at time.Time) Request {
	return Request{ID: call, Kind: taskwire.KindConfirmation, Session: session, Node: h.cfg.Node, Agent: h.agentOf(session),
		Tool: tool, Task: task, Call: call, Facts: f, Detail: detail, Opened: at}
}

// askExternal keeps what an external agent's call under a task's confirm
// grant asks (the hook's tool_input; cwd the hook payload's, else the
// session's workdir).
func (h *Host) askExternal(session, task, call, tool string, input []byte, cwd string) {
	if hs := h.lookup(session); cwd == "" && hs != nil {
		cwd = hs.workdir
	}
	if cwd == "" && h.cfg.Sessions != nil {
		if st, err := h.cfg.Sessions.Resolve(session); err == nil && st.SessionID == session {
			cwd = st.Cwd
		}
	}
	r := h.confirmationOf(session, task, call, tool, callfacts.Of(h.agentOf(session), tool, input, cwd), Detail(tool, input), h.cfg.Clock.Now())
	r.Summary = Summarize(tool, input)
	h.noteAsk(r)
}

// Confirmations are the node's calls that wait for `harn task confirm`,
// oldest first, each with what it asks when the host kept it (a call
// asked before this node started shows its tool alone).
func (h *Host) Confirmations() []Request {
	h.mu.Lock()
	ids := make([]string, 0, len(h.sessions))
	for id := range h.sessions {
		ids = append(ids, id)
	}
	before := h.askSeq
	h.mu.Unlock()
	var out []Request
	open := map[askKey]bool{}
	for _, id := range ids {
		if len(out) >= maxAsks {
			break
		}
		sv, err := h.rt.Session(id)
		if err != nil || sv.Task == nil {
			continue
		}
		for _, c := range sv.Task.PendingCalls {
			k := askKey{sv.Task.ID, c}
			open[k] = true
			h.mu.Lock()
			a, ok := h.asks[k]
			h.mu.Unlock()
			r := a.req
			if !ok {
				tool := ""
				if p, err := h.rt.Prior(sv.Task.ID, c); err == nil {
					tool = p.Capability
				}
				r = h.confirmationOf(id, sv.Task.ID, c, tool, taskwire.Facts{}, "", time.Time{})
				r.Summary = tool
			}
			out = append(out, r)
			if len(out) >= maxAsks {
				break
			}
		}
	}
	h.mu.Lock()
	for k, a := range h.asks {
		if !open[k] && a.seq <= before {
			delete(h.asks, k)
		}
	}
	h.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Opened.Equal(out[j].Opened) {
			return out[i].Opened.Before(out[j].Opened)
		}
		return out[i].ID < out[j].ID
	})
	return out
}
