// Package clockguard keeps an untrusted clock from steering a session. An
// event's time comes from the agent's machine (or its hook, or a payload
// an agent wrote): one stamped far in the future would sort after every
// later event and pin the session's state until that date. The guard gives
// such an event the receiving node's time and keeps the original as the
// attribute orig_ts, so that the operator can see it. It holds no state.
package clockguard

import (
	"fmt"
	"time"

	"github.com/harn-dev/harn/presence"
)

// MaxAhead is how far ahead of the receiving node's clock an event time
// may be before it is replaced: room for clocks that drift apart, no more.
const MaxAhead = 5 * time.Minute

// AttrOrigTS is the attribute that keeps the time an event was stamped
// with when the guard replaced it.
const AttrOrigTS = "orig_ts"

// Clamped is one event whose time the guard replaced.
type Clamped struct {
	EventID   string
	SessionID string
	// Orig is the time the event came with; Now the time it got.
	Orig, Now time.Time
}

// Message is the one-line diagnostic for the operator (`harn node
// errors`). The session id is quoted as data; renderers sanitize it.
func (c Clamped) Message() string {
	return fmt.Sprintf("event %s of session %q is stamped %s, %s ahead of this node's clock; stored at receipt time %s (the original is in attrs.%s); check the clock of the agent's machine",
		c.EventID, c.SessionID, presence.FormatTime(c.Orig), c.Orig.Sub(c.Now).Round(time.Second), presence.FormatTime(c.Now), AttrOrigTS)
}

// Guard replaces the time of every event of evs that lies more than
// MaxAhead after now with now, records the original in AttrOrigTS, and
// returns those events. Times at or before now+MaxAhead are kept as they
// are, however old (the Unix epoch is a valid time).
func Guard(evs []presence.Event, now time.Time) []Clamped {
	var out []Clamped
	now = now.Round(0).UTC()
	limit := now.Add(MaxAhead)
	for i := range evs {
		e := &evs[i]
		if !e.TS.After(limit) {
			continue
		}
		out = append(out, Clamped{EventID: e.ID, SessionID: e.SessionID, Orig: e.TS, Now: now})
		e.SetAttr(AttrOrigTS, presence.FormatTime(e.TS))
		e.TS = now
	}
	return out
}
