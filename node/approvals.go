package node

import (
	"sort"
	"time"

	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/presence"
)

// An operator's answer to a permission request is evidence: the node that
// owns the session records it as the session's interaction.input_resolved
// (the request's key, the decision, who gave it and why), folds it at
// once, so that the session leaves needs_input and the change is gossiped
// now, and drops the notifications still pending for the request. The
// answer may come from any node (routed here), the board or `harn agents
// approve|deny`; every path goes through Approvals.Answer.

// Decisions recorded on interaction.input_resolved.
const (
	DecisionAllow = "allow"
	DecisionDeny  = "deny"
)

// wireApprovals makes each answer a recorded event.
func (n *Node) wireApprovals() {
	n.tasks.Approvals().OnAnswer(n.recordAnswer)
}

// answerEvent is the interaction.input_resolved that records r's answer,
// stamped at now (or just after the session's last event, so that it
// sorts after the request it answers).
func answerEvent(r tasks.Request, now, last time.Time) presence.Event {
	ts := now
	if !last.Before(ts) {
		ts = last.Add(time.Millisecond)
	}
	d := DecisionDeny
	if r.Answer != nil && r.Answer.Allow {
		d = DecisionAllow
	}
	attrs := map[string]any{presence.AttrDecision: d, presence.AttrRequest: r.ID}
	// Without the request's key the answer names a key no request has, so
	// that it clears nothing it did not answer (a hook that predates keys).
	attrs[presence.AttrRequestKey] = "request:" + r.ID
	if r.Key != "" {
		attrs[presence.AttrRequestKey] = r.Key
	}
	if r.Tool != "" {
		attrs[presence.AttrTool] = r.Tool
	}
	if r.Answer != nil {
		attrs[presence.AttrBy] = r.Answer.By
		if r.Answer.Reason != "" {
			attrs[presence.AttrReason] = r.Answer.Reason
		}
	}
	return presence.Event{SessionID: r.Session, ParentSessionID: r.Parent, Type: presence.TypeInputResolved,
		TS: ts, Agent: r.Agent, Attrs: attrs}
}

// recordAnswer records r's answer and tells the notifications at once.
func (n *Node) recordAnswer(r tasks.Request) {
	if r.Session == "" {
		return
	}
	// Only a session this node holds: an answer never makes up a session.
	st, err := n.resolveLocal(r.Session)
	if err != nil || st.SessionID != r.Session {
		n.log.Warn("a permission answer for a session this node does not hold was not recorded", "request", r.ID, "session", r.Session)
		return
	}
	if _, err := n.Ingest([]presence.Event{answerEvent(r, n.cfg.Clock.Now(), st.LastEventAt)}); err != nil {
		n.log.Warn("recording a permission answer", "request", r.ID, "session", r.Session, "err", err)
		return
	}
	n.alerts.Resolved()
}

// requestFacts adds the session's facts to a waiting request: its name,
// project and branch, and its cwd when the call named none (what the
// operator approving it needs to know, on every surface).
func (n *Node) requestFacts(r *tasks.Request) {
	if r.Session == "" {
		return
	}
	st, err := n.resolveLocal(r.Session)
	if err != nil || st.SessionID != r.Session {
		return
	}
	r.Name, r.Project, r.Branch = st.Name, st.Project(), st.Branch
	if r.Cwd == "" {
		r.Cwd = st.Cwd
	}
}

// waiting are this node's calls that wait for an operator: the open
// permission requests and the task confirmations, oldest first, each
// with its session's facts.
func (n *Node) waiting() []tasks.Request {
	if n.tasks == nil {
		return nil
	}
	return waitingOf(n.tasks, n.requestFacts)
}

// waitingOf lists h's waiting calls; facts adds a confirmation's session
// facts (a permission request has them from its start).
func waitingOf(h *tasks.Host, facts func(*tasks.Request)) []tasks.Request {
	out := h.Approvals().List()
	for _, r := range h.Confirmations() {
		if facts != nil {
			facts(&r)
		}
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Opened.Before(out[j].Opened) })
	return out
}
