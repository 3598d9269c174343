package node

import (
	"time"

	"github.com/harn-dev/harn/node/gossip"
	"github.com/harn-dev/harn/presence"
)

// glance derives, for a roster read at now, what the fold never sets:
// silent_since (presence.SilentSince with the node's SilenceAfter) on the
// rows that do not have it yet, and a waiting subagent surfaced on its
// top-level session (presence.SurfaceChildren, over every row of the
// mesh). Local rows come with their silence (localEntries); a gossiped
// row's evidence time is refreshed only every gossip.EvidenceRefresh, so
// its silence waits that much longer, and a busy remote session is never
// shown silent early. Rows it changes lose their cached JSON.
func (n *Node) glance(rows []RosterEntry, now time.Time) {
	surface := false
	for i := range rows {
		r := &rows[i]
		switch r.Source {
		case "local":
		case "gossip":
			r.State.SilentSince = presence.SilentSince(&r.State, now, n.cfg.SilenceAfter+gossip.EvidenceRefresh)
		default:
			r.State.SilentSince = presence.SilentSince(&r.State, now, n.cfg.SilenceAfter)
		}
		if r.State.ParentSessionID != "" && r.State.Activity == presence.ActivityNeedsInput && !r.State.Ended {
			surface = true
		}
	}
	if !surface {
		return // the common case: no copy of the roster
	}
	states := make([]presence.State, len(rows))
	for i := range rows {
		states[i] = rows[i].State
	}
	presence.SurfaceChildren(states)
	for i := range rows {
		if states[i].WaitingChild == rows[i].State.WaitingChild {
			continue
		}
		rows[i].State = states[i]
		// It shows needs_input now: not silent.
		rows[i].State.SilentSince = presence.SilentSince(&rows[i].State, now, n.cfg.SilenceAfter)
	}
}
