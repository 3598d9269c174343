package node

import (
	"bytes"
	"slices"
	"time"

	"github.com/harn-dev/harn/node/gossip"
	"github.com/harn-dev/harn/presence"
)

// rosterJSON is RosterJSON at the node's now.
func (n *Node) rosterJSON(entries []RosterEntry, after time.Duration) ([]byte, error) {
	return RosterJSON(entries, n.cfg.Clock.Now(), after)
}

// RosterJSON writes entries as `harn agents list --json` prints them: one
// JSON array, most urgent first (presence.CompareUrgency), each entry
// with the silence rule applied also with the reader's threshold after
// (<= 0 adds none to the node's own; an entry found silent this way is
// changed in place), one entry a line. The CLI then
// writes the bytes as they are: for a roster of thousands of sessions it
// neither decodes nor re-sorts them, and the reply is one field, not one
// per session.
func RosterJSON(entries []RosterEntry, now time.Time, after time.Duration) ([]byte, error) {
	ranks := make([]presence.UrgencyRank, len(entries))
	for i := range entries {
		st := &entries[i].State
		if after > 0 && st.SilentSince.IsZero() {
			a := after
			if entries[i].Source == "gossip" {
				a += gossip.EvidenceRefresh // a peer's evidence reaches us this much later
			}
			if s := presence.SilentSince(st, now, a); !s.IsZero() {
				st.SilentSince, entries[i].raw = s, nil
			}
		}
		ranks[i] = st.UrgencyKey().Rank()
	}
	idx := make([]int32, len(entries))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(a, b int32) int { return presence.CompareUrgencyRank(ranks[a], ranks[b]) })
	var buf bytes.Buffer
	buf.Grow(len(entries)*700 + 4)
	buf.WriteByte('[')
	for i, k := range idx {
		b, err := entries[k].Encode()
		if err != nil {
			return nil, err
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteByte('\n')
		buf.Write(b)
	}
	if len(idx) > 0 {
		buf.WriteByte('\n')
	}
	buf.WriteString("]\n")
	return buf.Bytes(), nil
}
