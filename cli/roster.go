package cli

import (
	"bufio"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/presence"
)

// rosterRow is a roster row (api.SessionRow, the one form of a row) as
// the CLI shows it, with what this reader adds: the silence it found
// itself and the row's urgency.
type rosterRow struct {
	*api.SessionRow

	// silentComputed is set when this reader, not the node, found the
	// silence.
	silentComputed bool
	// rank is the row's urgency, computed by decodeRoster.
	rank presence.UrgencyRank
}

// newRosterRow is the CLI's view of a row from the node; a nil row (a
// node that sent none) is an error.
func newRosterRow(r *api.SessionRow) (*rosterRow, error) {
	if r == nil || r.SessionId == "" {
		return nil, errNoRow
	}
	if r.Activity == "" {
		r.Activity = string(presence.ActivityUnknown)
	}
	if r.TaskState == "" {
		r.TaskState = string(presence.TaskActive)
	}
	return &rosterRow{SessionRow: r}, nil
}

// errNoRow: the node's answer carries no session row.
var errNoRow = errors.New("cli: the node's answer carries no session row")

// Times of the row.
func (r *rosterRow) activityAt() time.Time       { return api.TimeOf(r.ActivityUpdatedAtUnixNano) }
func (r *rosterRow) taskStateAt() time.Time      { return api.TimeOf(r.TaskStateUpdatedAtUnixNano) }
func (r *rosterRow) silentSince() time.Time      { return api.TimeOf(r.SilentSinceUnixNano) }
func (r *rosterRow) startedAt() time.Time        { return api.TimeOf(r.StartedAtUnixNano) }
func (r *rosterRow) endedAt() time.Time          { return api.TimeOf(r.EndedAtUnixNano) }
func (r *rosterRow) unreachableSince() time.Time { return api.TimeOf(r.UnreachableSinceUnixNano) }

// evidenceAt is the time of the session's latest evidence.
func (r *rosterRow) evidenceAt() time.Time { return r.SessionRow.EvidenceAt() }

// markSilence applies the honest-silence rule where the node has not: a
// working session whose latest evidence is older than after is silent
// since that evidence. Activity is never changed. after <= 0 turns the
// rule off.
func (r *rosterRow) markSilence(now time.Time, after time.Duration) {
	if after <= 0 || r.SilentSinceUnixNano != 0 || r.Ended || r.Activity != string(presence.ActivityWorking) {
		return
	}
	ev := r.evidenceAt()
	if ev.IsZero() || now.Sub(ev) <= after {
		return
	}
	r.SilentSinceUnixNano, r.silentComputed = api.UnixNano(ev), true
}

// silent reports whether a working row is to be shown as silent.
func (r *rosterRow) silent() bool {
	return r.SilentSinceUnixNano != 0 && r.Activity == string(presence.ActivityWorking) && !r.Ended
}

// writeJSON writes the row's JSON form (api.RowJSON).
func (r *rosterRow) writeJSON(w *bufio.Writer) error {
	b, err := api.MarshalRowJSON(r.SessionRow)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// project is the row's PROJECT column: the project and @branch when
// known. List, show and --consistent all show this.
func (r *rosterRow) project() string { return r.ProjectBranch() }

// sortRows orders rows by urgency (presence.CompareUrgency), over the
// ranks decodeRoster computed once per row.
func sortRows(rows []*rosterRow) {
	slices.SortFunc(rows, func(a, b *rosterRow) int { return presence.CompareUrgencyRank(a.rank, b.rank) })
}

// placed is a row in display order with its depth under its parent.
type placed struct {
	row   int
	depth int
}

// treeOrder lists sorted rows with each child right under its parent
// (parents first, children in the rows' order), at any depth. A child
// whose parent is not listed is at the top level, where its own urgency
// puts it. A cycle of parents cannot hide rows: whatever is left is
// placed at the top level.
func treeOrder(rows []*rosterRow) []placed {
	index := make(map[string]int, len(rows))
	for i := range rows {
		if _, dup := index[rows[i].SessionId]; !dup {
			index[rows[i].SessionId] = i
		}
	}
	children := map[int][]int{}
	var roots []int
	for i := range rows {
		p, ok := index[rows[i].ParentSessionId]
		if rows[i].ParentSessionId == "" || !ok || p == i {
			roots = append(roots, i)
			continue
		}
		children[p] = append(children[p], i)
	}
	out := make([]placed, 0, len(rows))
	seen := make([]bool, len(rows))
	var walk func(i, depth int)
	walk = func(i, depth int) {
		if seen[i] {
			return
		}
		seen[i] = true
		out = append(out, placed{row: i, depth: depth})
		for _, c := range children[i] {
			walk(c, depth+1)
		}
	}
	for _, i := range roots {
		walk(i, 0)
	}
	for i := range rows {
		walk(i, 0)
	}
	return out
}

// minHandle is the shortest id prefix the roster shows.
const minHandle = 6

// shortIDs returns, for each id, its shortest prefix of at least
// minHandle bytes (cut on a rune boundary) that no other listed id
// shares, so that it can be pasted back where an id is accepted.
func shortIDs(ids []string) []string {
	order := make([]int, len(ids))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(ids[a], ids[b]) })
	out := make([]string, len(ids))
	for k, i := range order {
		n := minHandle
		for _, nb := range []int{k - 1, k + 1} {
			if nb < 0 || nb >= len(order) {
				continue
			}
			o := ids[order[nb]]
			if o == ids[i] {
				continue // the same id twice: nothing tells them apart
			}
			n = max(n, commonPrefix(ids[i], o)+1)
		}
		out[i] = cutRunes(ids[i], n)
	}
	return out
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// cutRunes is s's first n bytes, extended to the end of a rune.
func cutRunes(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n < len(s) && s[n]&0xc0 == 0x80 {
		n++
	}
	return s[:n]
}
