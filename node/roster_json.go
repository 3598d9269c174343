package node

import (
	"slices"
	"time"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/gossip"
	"github.com/harn-dev/harn/presence"
)

// rosterRows is RosterRows at the node's now.
func (n *Node) rosterRows(entries []RosterEntry, after time.Duration) []*api.SessionRow {
	return RosterRows(entries, n.cfg.Clock.Now(), after)
}

// RosterRows are entries as `harn agents list --json` prints them: most
// urgent first (presence.CompareUrgency), each entry with the silence
// rule applied also with the reader's threshold after (<= 0 adds none to
// the node's own; an entry found silent this way is changed in place).
func RosterRows(entries []RosterEntry, now time.Time, after time.Duration) []*api.SessionRow {
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
