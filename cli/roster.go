package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/harn-dev/harn/presence"
)

// rosterRow is a roster entry as the CLI reads it from the node's JSON.
// It is the CLI's own view: it reads the fields the node writes today and
// those newer nodes add (last_evidence_at, waiting_on, project, branch,
// silent_since, waiting_child), and works when any of them is absent.
// The core is what sorting and the silence rule read (the --json path
// over thousands of rows); rowDetail is read only for human views.
type rosterRow struct {
	raw []byte

	SessionID, ParentSessionID, Activity, TaskState string
	Ended                                           bool
	ActivityAt, TaskStateAt, SilentSince            time.Time

	// lastEvent and lastEvidence are the raw JSON values, parsed only
	// when needed.
	lastEvent, lastEvidence []byte
	// silentComputed is set when this reader, not the node, found the
	// silence.
	silentComputed bool
	// rank is the row's urgency, computed by sortRows.
	rank presence.UrgencyRank

	*rowDetail
}

// rowDetail is what human views show beyond the core.
type rowDetail struct {
	Agent, Node, Name, SessionName, ActivitySource, BlockerReason, Task string
	Cwd, WaitingOn, Project, Branch, WaitingChild, EndReason            string
	Claims                                                              []string
	PendingClaims                                                       []string
	Reachable                                                           bool
	AgentPID, Events                                                    int
	StartedAt, UnreachableSince, EndedAt                                time.Time
	HarnTask                                                            *harnTaskCell // harn_task
}

// parseTime reads a raw JSON time value. The node's own layout
// (presence.FormatTime: "2006-01-02T15:04:05.000Z") is read directly,
// which matters over thousands of rows; anything else goes through
// presence.ParseTime. A value that is not a time is the zero time.
func parseTime(val []byte) time.Time {
	if len(val) == 26 && val[0] == '"' && val[25] == '"' {
		if t, ok := parseMillisUTC(val[1:25]); ok {
			return t
		}
	}
	if len(val) == 0 {
		return time.Time{}
	}
	t, _ := presence.ParseTime(jsonString(val))
	return t
}

// parseMillisUTC parses exactly "2006-01-02T15:04:05.000Z".
func parseMillisUTC(b []byte) (time.Time, bool) {
	if b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' || b[19] != '.' || b[23] != 'Z' {
		return time.Time{}, false
	}
	ok := true
	num := func(i, n int) int {
		v := 0
		for _, c := range b[i : i+n] {
			if c < '0' || c > '9' {
				ok = false
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	y, mo, d := num(0, 4), num(5, 2), num(8, 2)
	h, mi, s, ms := num(11, 2), num(14, 2), num(17, 2), num(20, 3)
	if !ok || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 59 {
		return time.Time{}, false
	}
	t := time.Date(y, time.Month(mo), d, h, mi, s, ms*int(time.Millisecond), time.UTC)
	if t.Day() != d { // February 30th and the like: let the full parser refuse it
		return time.Time{}, false
	}
	return t, true
}

// knownWord returns the constant for a common state value, so that
// thousands of rows share one string instead of one allocation each.
func knownWord(val []byte) string {
	switch string(val) {
	case `"working"`:
		return "working"
	case `"idle"`:
		return "idle"
	case `"needs_input"`:
		return "needs_input"
	case `"unknown"`:
		return "unknown"
	case `"active"`:
		return "active"
	case `"blocked"`:
		return "blocked"
	case `"done"`:
		return "done"
	}
	return jsonString(val)
}

// decodeRosterRow reads one roster entry. With full unset it reads only
// the core; full reads everything a human view shows.
func decodeRosterRow(b []byte, full bool) (rosterRow, error) {
	var r rosterRow
	err := r.decode(b, full)
	return r, err
}

// decode fills r from one roster entry (see decodeRosterRow).
func (r *rosterRow) decode(b []byte, full bool) error {
	*r = rosterRow{raw: b}
	var d *rowDetail
	if full {
		d = &rowDetail{Reachable: true}
		r.rowDetail = d
	}
	var actAt, taskAt []byte
	err := scanObject(b, func(k, v []byte) {
		switch string(k) {
		case "session_id":
			r.SessionID = jsonString(v)
		case "parent_session_id":
			r.ParentSessionID = jsonString(v)
		case "activity":
			r.Activity = knownWord(v)
		case "activity_updated_at":
			actAt = v
		case "task_state":
			r.TaskState = knownWord(v)
		case "task_state_updated_at":
			taskAt = v
		case "ended":
			r.Ended = string(v) == "true"
		case "last_event_at":
			r.lastEvent = v
		case "last_evidence_at":
			r.lastEvidence = v
		case "silent_since":
			r.SilentSince = parseTime(v)
		}
		if d == nil {
			return
		}
		switch string(k) {
		case "agent":
			d.Agent = jsonString(v)
		case "node":
			d.Node = jsonString(v)
		case "name":
			d.Name = jsonString(v)
		case "session_name":
			d.SessionName = jsonString(v)
		case "activity_source":
			d.ActivitySource = jsonString(v)
		case "blocker_reason":
			d.BlockerReason = jsonString(v)
		case "task":
			d.Task = jsonString(v)
		case "cwd":
			d.Cwd = jsonString(v)
		case "waiting_on":
			d.WaitingOn = jsonString(v)
		case "project":
			d.Project = jsonString(v)
		case "branch":
			d.Branch = jsonString(v)
		case "waiting_child":
			d.WaitingChild = jsonString(v)
		case "end_reason":
			d.EndReason = jsonString(v)
		case "harn_task":
			d.HarnTask = decodeHarnTask(v)
		case "claims":
			_ = json.Unmarshal(v, &d.Claims)
		case "pending_claims":
			_ = json.Unmarshal(v, &d.PendingClaims)
		case "reachable":
			d.Reachable = string(v) != "false"
		case "agent_pid":
			_ = json.Unmarshal(v, &d.AgentPID)
		case "events":
			_ = json.Unmarshal(v, &d.Events)
		case "started_at":
			d.StartedAt = parseTime(v)
		case "ended_at":
			d.EndedAt = parseTime(v)
		case "unreachable_since":
			d.UnreachableSince = parseTime(v)
		}
	})
	if err != nil {
		// Let encoding/json say what is wrong.
		var probe map[string]json.RawMessage
		if jerr := json.Unmarshal(b, &probe); jerr != nil {
			return jerr
		}
		return err
	}
	if r.Activity == "" {
		r.Activity = string(presence.ActivityUnknown)
	}
	if r.TaskState == "" {
		r.TaskState = string(presence.TaskActive)
	}
	r.ActivityAt = parseTime(actAt)
	if full || r.TaskState == string(presence.TaskBlocked) {
		r.TaskStateAt = parseTime(taskAt)
	}
	return nil
}

// urgencyKey is the row's key for presence.CompareUrgency.
func (r *rosterRow) urgencyKey() presence.UrgencyKey {
	return presence.UrgencyKey{SessionID: r.SessionID, Activity: presence.Activity(r.Activity),
		TaskState: presence.TaskState(r.TaskState), Ended: r.Ended,
		ActivityUpdatedAt: r.ActivityAt, TaskStateUpdatedAt: r.TaskStateAt}
}

// evidenceAt is the time of the session's latest evidence: the node's
// last_evidence_at, or its last event where the node does not say.
func (r *rosterRow) evidenceAt() time.Time {
	if t := parseTime(r.lastEvidence); !t.IsZero() {
		return t
	}
	return parseTime(r.lastEvent)
}

// markSilence applies the honest-silence rule where the node has not: a
// working session whose latest evidence is older than after is silent
// since that evidence. Activity is never changed. after <= 0 turns the
// rule off.
func (r *rosterRow) markSilence(now time.Time, after time.Duration) {
	if after <= 0 || !r.SilentSince.IsZero() || r.Ended || r.Activity != string(presence.ActivityWorking) {
		return
	}
	ev := r.evidenceAt()
	if ev.IsZero() || now.Sub(ev) <= after {
		return
	}
	r.SilentSince, r.silentComputed = ev, true
}

// silent reports whether a working row is to be shown as silent.
func (r *rosterRow) silent() bool {
	return !r.SilentSince.IsZero() && r.Activity == string(presence.ActivityWorking) && !r.Ended
}

// writeJSON writes the row's JSON as the node wrote it, with
// silent_since added when this reader found the silence.
func (r *rosterRow) writeJSON(w *bufio.Writer) {
	b := r.raw
	if r.silentComputed {
		b = bytes.TrimRight(b, " \n\t\r")
	}
	if !r.silentComputed || len(b) < 2 || b[len(b)-1] != '}' {
		w.Write(r.raw)
		return
	}
	body := b[:len(b)-1]
	w.Write(body)
	if len(bytes.TrimSpace(body)) > 1 { // not "{"
		w.WriteByte(',')
	}
	w.WriteString(`"silent_since":"`)
	w.WriteString(presence.FormatTime(r.SilentSince))
	w.WriteString(`"}`)
}

// project is the row's project column: the node's project (or the cwd's
// basename when the node does not say) and @branch when known.
func (r *rosterRow) project() string {
	p := r.Project
	if p == "" && r.Cwd != "" {
		p = path.Base(strings.TrimRight(r.Cwd, "/"))
		if p == "." || p == "/" {
			p = ""
		}
	}
	if r.Branch != "" {
		if p == "" {
			p = "-"
		}
		p += "@" + r.Branch
	}
	return p
}

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
		if _, dup := index[rows[i].SessionID]; !dup {
			index[rows[i].SessionID] = i
		}
	}
	children := map[int][]int{}
	var roots []int
	for i := range rows {
		p, ok := index[rows[i].ParentSessionID]
		if rows[i].ParentSessionID == "" || !ok || p == i {
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
