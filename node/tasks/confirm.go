package tasks

import (
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/text"
)

// The attributes of the node's interaction.input_resolved for a
// confirmation: the decision (allow or deny) and who gave it.
const (
	attrDecision = "decision"
	attrBy       = "by"
)

// confirmedBy names who confirmed a call, when it was confirmed.
func (h *Host) confirmedBy(task, call string) (string, bool) {
	c, err := h.rt.Prior(task, call)
	if err != nil || c.ConfirmedBy == "" {
		return "", false
	}
	return c.ConfirmedBy, true
}

// agentOf is the agent name the node's events about a session carry.
func (h *Host) agentOf(session string) string {
	if hs := h.lookup(session); hs != nil && hs.external && hs.agent != "" {
		return hs.agent
	}
	return Agent
}

// inputRequested records that a call waits for a confirmation: the
// session needs its operator (needs_input) until the answer. The request
// key is the call's id (the agent's tool_use_id); the summary is the safe
// one of the approvals (the program, or a file's base name).
func (h *Host) inputRequested(session, call, tool string, input []byte) {
	if session == "" {
		return
	}
	attrs := map[string]any{presence.AttrRequestKey: call, presence.AttrTool: text.Clip(tool, 200),
		presence.AttrSummary: Summarize(tool, input)}
	if err := h.emit(presence.Event{SessionID: session, Type: presence.TypeInputRequested, TS: h.cfg.Clock.Now(),
		Agent: h.agentOf(session), Attrs: attrs}); err != nil {
		h.log.Warn("confirmation request event", "session", session, "call", call, "err", err)
	}
	h.changed(session)
}

// inputResolved records the answer to a confirmation: the session works
// again, and its trace holds the decision, who gave it and why.
func (h *Host) inputResolved(session, call string, allow bool, by, reason string) {
	if session == "" {
		return
	}
	d := "deny"
	if allow {
		d = "allow"
	}
	attrs := map[string]any{presence.AttrRequestKey: call, attrDecision: d, attrBy: text.Clip(by, 200)}
	if reason != "" {
		attrs[presence.AttrReason] = text.Clip(text.OneLine(reason), 400)
	}
	if err := h.emit(presence.Event{SessionID: session, Type: presence.TypeInputResolved, TS: h.cfg.Clock.Now(),
		Agent: h.agentOf(session), Attrs: attrs}); err != nil {
		h.log.Warn("confirmation answer event", "session", session, "call", call, "err", err)
	}
	h.changed(session)
}
