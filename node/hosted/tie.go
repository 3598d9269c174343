package hosted

import (
	"encoding/json"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/procinfo"
)

// maxAncestry bounds the walk from a hook's agent up to the hosted
// process.
const maxAncestry = 32

// Tie ties the hook events of hosted agents to their hosted rows, in
// place, before the node stores them. The agent's hook forwards
// HARN_HOSTED_ID as AttrHostedID; an event that names a hosted session so
// and whose agent process (AttrAgentPID, AttrAgentStart, which the hook
// reads from /proc) is the hosted process or runs below it takes the
// hosted session's id (its own id goes to AttrAgentSession, and a
// subagent's parent link follows). A forged variable from elsewhere does
// not hold: its AttrHostedID is dropped and the event keeps its own
// session. Events that name a hosted session's id directly, from an agent
// process outside its tree, are refused (ErrForged).
func (r *Room) Tie(evs []presence.Event) error {
	for i := range evs {
		e := &evs[i]
		hid := e.AttrString(AttrHostedID)
		if hid == "" {
			if s := r.anySession(e.SessionID); s != nil && hasPID(e) && !s.owns(agentProc(e)) {
				r.log.Warn("hosted: refused events that claim a hosted session from another process", "session", e.SessionID, "pid", agentProc(e).PID)
				return ErrForged
			}
			continue
		}
		s := r.anySession(hid)
		if s == nil || !hasPID(e) || !s.owns(agentProc(e)) {
			r.log.Warn("hosted: a hook named a hosted session it does not run in; its events keep their own session", "hosted_id", clip(hid), "session", clip(e.SessionID))
			delete(e.Attrs, AttrHostedID)
			continue
		}
		s.mu.Lock()
		switch {
		case e.SessionID == s.id:
		case e.ParentSessionID == "" || e.ParentSessionID == e.SessionID:
			if len(s.natives) < 64 {
				s.natives[e.SessionID] = true
			}
			e.SetAttr(AttrAgentSession, e.SessionID)
			e.SessionID, e.ParentSessionID = s.id, ""
		case s.natives[e.ParentSessionID]:
			e.ParentSessionID = s.id
		}
		s.mu.Unlock()
	}
	return nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80]
	}
	return s
}

// anySession is a live hosted session, or one that ended lately.
func (r *Room) anySession(id string) *session {
	if len(id) < 3 || id[:3] != "hs-" {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.sessions[id]; s != nil {
		return s
	}
	for _, s := range r.ended {
		if s.id == id {
			return s
		}
	}
	return nil
}

// owns reports whether p is the hosted process or runs below it. A
// process seen once stays known (a hook's spooled events may arrive
// after it exited).
func (s *session) owns(p procinfo.Proc) bool {
	if p.PID <= 0 {
		return false
	}
	if p.PID == s.proc.PID && (p.Start == 0 || s.proc.Start == 0 || p.Start == s.proc.Start) {
		return true
	}
	s.mu.Lock()
	ok := s.verified[p]
	s.mu.Unlock()
	if ok {
		return true
	}
	chain, err := procinfo.Ancestry(p.PID, maxAncestry)
	if err != nil || len(chain) == 0 || (p.Start != 0 && chain[0].Start != p.Start) {
		return false
	}
	for _, q := range chain[1:] {
		if q.PID == s.proc.PID && (s.proc.Start == 0 || q.Start == s.proc.Start) {
			s.mu.Lock()
			if len(s.verified) < 256 {
				s.verified[p] = true
			}
			s.mu.Unlock()
			return true
		}
	}
	return false
}

func hasPID(e *presence.Event) bool { return agentProc(e).PID > 0 }

// agentProc is the agent process a hook recorded on an event.
func agentProc(e *presence.Event) procinfo.Proc {
	return procinfo.Proc{PID: int(num(e.Attrs[presence.AttrAgentPID])), Start: uint64(num(e.Attrs[presence.AttrAgentStart]))}
}

func num(v any) int64 {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int64:
		return x
	case uint64:
		return int64(x)
	case float64:
		return int64(x)
	case json.Number:
		n, _ := x.Int64()
		return n
	}
	return 0
}
