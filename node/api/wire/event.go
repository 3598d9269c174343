package wire

import (
	"encoding/json"
	"time"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/presence"
)

// EventFromAPI converts a wire event.
func EventFromAPI(e *api.Event) (presence.Event, error) {
	ev := presence.Event{ID: e.Id, SessionID: e.SessionId, ParentSessionID: e.ParentSessionId,
		Type: e.Type, Agent: e.Agent, Node: e.Node, Seq: e.Seq}
	// 0 is the Unix epoch, a valid time, when the sender says it set it.
	if e.TsUnixNano != 0 || e.TsSet {
		ev.TS = time.Unix(0, e.TsUnixNano).UTC()
	}
	if len(e.AttrsJson) > 0 {
		var attrs map[string]any
		if err := json.Unmarshal(e.AttrsJson, &attrs); err != nil {
			return ev, &presence.FieldError{Field: "attrs", Msg: "is not a JSON object"}
		}
		ev.Attrs = presence.NormalizeAttrs(attrs)
	}
	return ev, nil
}

// EventToAPI converts an event for the wire.
func EventToAPI(e *presence.Event) *api.Event {
	out := &api.Event{Id: e.ID, SessionId: e.SessionID, ParentSessionId: e.ParentSessionID,
		Type: e.Type, Agent: e.Agent, Node: e.Node, Seq: e.Seq}
	if !e.TS.IsZero() {
		out.TsUnixNano, out.TsSet = e.TS.UnixNano(), true
	}
	if len(e.Attrs) > 0 {
		out.AttrsJson, _ = json.Marshal(e.Attrs)
	}
	return out
}
