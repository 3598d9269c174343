package roster

import (
	"slices"
	"time"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/gossip"
	"github.com/harn-dev/harn/presence"
)

// Rows are entries as `harn agents list --json` prints them (Rows at the
// node's now).
func (ro *Roster) Rows(entries []Entry, after time.Duration) []*api.SessionRow {
	return Rows(entries, ro.cfg.Clock.Now(), after)
}

// Rows are entries as `harn agents list --json` prints them: most
// urgent first (presence.CompareUrgency), each entry with the silence
// rule applied also with the reader's threshold after (<= 0 adds none to
// the node's own; an entry found silent this way is changed in place).
func Rows(entries []Entry, now time.Time, after time.Duration) []*api.SessionRow {
	ranks := make([]presence.UrgencyRank, len(entries))
	for i := range entries {
		st := &entries[i].State
		if after > 0 && st.SilentSince.IsZero() {
			a := after
			if entries[i].Source == "gossip" {
				a += gossip.EvidenceRefresh // a peer's evidence reaches us this much later
			}
			if s := presence.SilentSince(st, now, a); !s.IsZero() {
				st.SilentSince = s
			}
		}
		ranks[i] = st.UrgencyKey().Rank()
	}
	idx := make([]int32, len(entries))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(a, b int32) int { return presence.CompareUrgencyRank(ranks[a], ranks[b]) })
	out := make([]*api.SessionRow, len(idx))
	for i, k := range idx {
		out[i] = entries[k].Row()
	}
	return out
}

// glance derives, for a roster read at now, what the fold never sets:
// silent_since (presence.SilentSince with the node's SilenceAfter) on the
// rows that do not have it yet, and a waiting subagent surfaced on its
// top-level session (presence.SurfaceChildren, over every row of the
// mesh). Local rows come with their silence (localEntries); a gossiped
// row's evidence time is refreshed only every gossip.EvidenceRefresh, so
// its silence waits that much longer, and a busy remote session is never
// shown silent early.
func (ro *Roster) glance(rows []Entry, now time.Time) {
	surface := false
	for i := range rows {
		r := &rows[i]
		switch r.Source {
		case "local":
		case "gossip":
			r.State.SilentSince = presence.SilentSince(&r.State, now, ro.cfg.SilenceAfter+gossip.EvidenceRefresh)
		default:
			r.State.SilentSince = presence.SilentSince(&r.State, now, ro.cfg.SilenceAfter)
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
		rows[i].State.SilentSince = presence.SilentSince(&rows[i].State, now, ro.cfg.SilenceAfter)
	}
}
