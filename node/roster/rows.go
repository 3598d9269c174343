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
		r := entries[i].SessionRow
		if after > 0 && r.GetSilentSinceUnixNano() == 0 {
			a := after
			if r.GetSource() == "gossip" {
				a += gossip.EvidenceRefresh // a peer's evidence reaches us this much later
			}
			if s := r.SilentSince(now, a); !s.IsZero() {
				r.SilentSinceUnixNano = api.UnixNano(s)
			}
		}
		ranks[i] = r.UrgencyKey().Rank()
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
		r := rows[i].SessionRow
		switch r.GetSource() {
		case "local":
		case "gossip":
			r.SilentSinceUnixNano = api.UnixNano(r.SilentSince(now, ro.cfg.SilenceAfter+gossip.EvidenceRefresh))
		default:
			r.SilentSinceUnixNano = api.UnixNano(r.SilentSince(now, ro.cfg.SilenceAfter))
		}
		if r.GetParentSessionId() != "" && r.GetActivity() == string(presence.ActivityNeedsInput) && !r.GetEnded() {
			surface = true
		}
	}
	if !surface {
		return // the common case: no states made
	}
	// Surfacing reads the whole roster's parent links: over states made
	// for it, the changes copied back to the rows.
	states := make([]presence.State, len(rows))
	for i := range rows {
		states[i] = rows[i].State()
	}
	presence.SurfaceChildren(states)
	for i := range rows {
		st, r := &states[i], rows[i].SessionRow
		if st.WaitingChild == r.GetWaitingChild() {
			continue
		}
		r.Activity, r.ActivitySource = string(st.Activity), st.ActivitySource
		r.ActivityUpdatedAtUnixNano = api.UnixNano(st.ActivityUpdatedAt)
		r.WaitingChild, r.WaitingOn = st.WaitingChild, st.WaitingOn
		// It shows needs_input now: not silent.
		r.SilentSinceUnixNano = api.UnixNano(r.SilentSince(now, ro.cfg.SilenceAfter))
	}
}
