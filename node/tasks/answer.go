package tasks

import (
	"time"

	"github.com/harn-dev/harn/presence"
)

// An operator's answer to a permission request is evidence: the node that
// owns the session records AnswerEvent as the session's
// interaction.input_resolved (the request's key, the decision, who gave
// it and why) and folds it at once, so that the session leaves
// needs_input and the change is gossiped now. The answer may come from any
// node (routed to the owner), the board or `harn agents approve|deny`;
// every path goes through Approvals.Answer, whose OnAnswer records it.

// Decisions recorded on interaction.input_resolved.
const (
	DecisionAllow = "allow"
	DecisionDeny  = "deny"
)

// AnswerEvent is the interaction.input_resolved that records r's answer,
// stamped at now (or just after the session's last event, so that it
// sorts after the request it answers).
func AnswerEvent(r Request, now, last time.Time) presence.Event {
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
