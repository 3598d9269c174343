package hookwire

import (
	"encoding/json"

	"github.com/harn-dev/harn/presence"
)

// EventOf is e on the wire (as node/api/wire's EventToAPI).
func EventOf(e *presence.Event) *Event {
	out := &Event{Id: e.ID, SessionId: e.SessionID, ParentSessionId: e.ParentSessionID,
		Type: e.Type, Agent: e.Agent, Node: e.Node, Seq: e.Seq}
	if !e.TS.IsZero() {
		out.TsUnixNano, out.TsSet = e.TS.UnixNano(), true
	}
	if len(e.Attrs) > 0 {
		out.AttrsJson, _ = json.Marshal(e.Attrs)
	}
	return out
}
