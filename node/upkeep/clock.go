package upkeep

import (
	"github.com/harn-dev/harn/node/clockguard"
	"github.com/harn-dev/harn/presence"
)

// NoteClamped records a diagnostic (`harn node errors`) for each stored
// event whose future time the clock guard replaced; a duplicate of an event
// already stored is not noted again.
func (k *Keeper) NoteClamped(clamped []clockguard.Clamped, stored []presence.Event) {
	if len(clamped) == 0 {
		return
	}
	ids := make(map[string]bool, len(stored))
	for i := range stored {
		ids[stored[i].ID] = true
	}
	for _, c := range clamped {
		if !ids[c.EventID] {
			continue
		}
		k.Log.Warn("event from the future stored at receipt time", "session", c.SessionID,
			"event", c.EventID, "orig_ts", presence.FormatTime(c.Orig))
		k.Diagnose("clock", c.Message(), 0, "")
	}
}
