package board

import (
	"encoding/json"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/text"
)

// The values the activity and lifecycle filters offer.
var (
	activities = []string{"needs_input", "working", "idle", "unknown"}
	lifecycles = []string{"active", "blocked", "done"}
)

// Filter is the board's selection, from the query string (node, agent,
// activity, lifecycle); an empty field selects everything.
type Filter struct {
	Node, Agent, Activity, Lifecycle string
}

func filterOf(q url.Values) Filter {
	g := func(k string) string { return text.OneLine(q.Get(k)) }
	return Filter{Node: g("node"), Agent: g("agent"), Activity: g("activity"), Lifecycle: g("lifecycle")}
}

// Query is the filter as a query string ("" when empty).
func (f Filter) Query() string {
	v := url.Values{}
	for k, s := range map[string]string{"node": f.Node, "agent": f.Agent, "activity": f.Activity, "lifecycle": f.Lifecycle} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v.Encode()
}

// Active reports whether any field is set.
func (f Filter) Active() bool { return f != Filter{} }

func activityOf(r Row) string {
	if a := r.GetActivity(); slices.Contains(activities, a) {
		return a
	}
	return "unknown"
}

func lifecycleOf(r Row) string {
	if l := r.GetTaskState(); slices.Contains(lifecycles, l) {
		return l
	}
	return "active"
}

// Match reports whether r passes the filter.
func (f Filter) Match(r Row) bool {
	return (f.Node == "" || f.Node == r.GetNode()) && (f.Agent == "" || f.Agent == r.GetAgent()) &&
		(f.Activity == "" || f.Activity == activityOf(r)) &&
		(f.Lifecycle == "" || f.Lifecycle == lifecycleOf(r))
}

// card is one session on the board.
type card struct {
	ID, Short, Agent, Name, Task string
	Activity, ActivityLabel      string
	Silent                       string // "silent 7m", when working and silent
	Lifecycle, LifecycleLabel    string // set for blocked and done only
	Evidence                     stamp
	WaitingOn                    string
	Project, Branch              string
	Unreachable                  bool
	Requests                     []Request
	Hosted                       *api.HostedView // a hosted session's terminal (its peek while it needs input)
	Actions                      bool            // render the action buttons
	CSRF                         string          // for the forms that work without the script
	HarnTask                     *api.HarnTask   // the harn task when it can be steered
}

// stamp is a time as the page shows it: an age now, and the time for the
// script that keeps the age current.
type stamp struct {
	Age   string
	ISO   string
	Human string // to the second, in UTC: what the page prints
}

// humanLayout is how the detail page prints a time: the machine-readable
// RFC 3339 form with nanoseconds stays in the datetime and title attributes.
const humanLayout = "2006-01-02 15:04:05 UTC"

func stampOf(now, t time.Time) stamp {
	if t.IsZero() {
		return stamp{Age: "-"}
	}
	return stamp{Age: text.Age(now, t), ISO: t.UTC().Format(time.RFC3339Nano), Human: t.UTC().Format(humanLayout)}
}

// group is one machine's cards.
type group struct {
	Node        string
	Unreachable bool
	Since       stamp
	Cards       []card
}

// boardView is the board fragment's data.
type boardView struct {
	Groups          []group
	Live, Shown     int
	Counts          map[string]int
	Filter          Filter
	Err             string
	ActionsOn       bool
	NowISO          string
	NeedsAttention  int
	FilterQueryPart string
}

func short(id string) string { return text.Clip(id, 12) }

// Bounds of a request's facts on a page: the detail and a path in runes,
// the command and the diff in bytes (the node's own bounds).
const (
	maxDetail  = 2048
	maxPath    = 1024
	maxCommand = 4 << 10
	maxDiff    = 8 << 10
)

// waited returns rs with how long each has waited, at now.
func waited(now time.Time, rs []Request) []Request {
	if len(rs) == 0 {
		return rs
	}
	out := slices.Clone(rs)
	for i := range out {
		if !out[i].Opened.IsZero() {
			out[i].Waited = text.Age(now, out[i].Opened)
		}
	}
	return out
}

func cardOf(now time.Time, r Row) card {
	c := card{ID: r.GetSessionId(), Short: short(r.GetSessionId()), Agent: orDash(r.GetAgent()), Name: r.GetName(),
		Task: text.Clip(text.OneLine(r.TaskText()), 240), Activity: activityOf(r), WaitingOn: r.GetWaitingOn(),
		Project: r.ProjectName(), Branch: r.GetBranch(), Unreachable: !r.GetReachable(), Evidence: stampOf(now, r.Evidence()),
		Requests: waited(now, r.PendingRequests)}
	c.ActivityLabel = strings.ReplaceAll(c.Activity, "_", " ")
	if silent := api.TimeOf(r.GetSilentSinceUnixNano()); c.Activity == "working" && !silent.IsZero() {
		c.Silent = "silent " + text.Age(now, silent)
	}
	if c.WaitingOn == "" && r.GetWaitingChild() != "" {
		c.WaitingOn = "child " + r.GetWaitingChild()
	}
	switch lifecycleOf(r) {
	case "blocked":
		c.Lifecycle, c.LifecycleLabel = "blocked", "blocked"
		if br := r.GetBlockerReason(); br != "" {
			c.LifecycleLabel += ": " + text.Clip(text.OneLine(br), 160)
		}
	case "done":
		c.Lifecycle, c.LifecycleLabel = "done", "done"
	}
	if r.HasTask() {
		c.HarnTask = r.GetHarnTask()
	}
	c.Hosted = r.GetHosted()
	return c
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// buildBoard sorts and groups the live rows that pass f. Groups come in the
// order of their most urgent card, reachable machines first.
func (s *Server) buildBoard(rows []Row, f Filter) boardView {
	now := s.cfg.Clock.Now()
	v := boardView{Filter: f, Counts: map[string]int{}, ActionsOn: s.cfg.Actions != nil,
		NowISO: now.UTC().Format(time.RFC3339Nano), FilterQueryPart: f.Query()}
	live := make([]Row, 0, len(rows))
	for _, r := range rows {
		if r.GetEnded() {
			continue
		}
		v.Live++
		v.Counts[activityOf(r)]++
		if lifecycleOf(r) == "blocked" {
			v.Counts["blocked"]++
		}
		if rank(r) <= rankBlocked {
			v.NeedsAttention++
		}
		if f.Match(r) {
			live = append(live, r)
		}
	}
	sort.SliceStable(live, func(i, j int) bool { return s.cfg.Less(live[i], live[j]) })
	v.Shown = len(live)
	idx := map[string]int{}
	for _, r := range live {
		i, ok := idx[r.GetNode()]
		if !ok {
			i = len(v.Groups)
			idx[r.GetNode()] = i
			v.Groups = append(v.Groups, group{Node: orDash(r.GetNode()), Unreachable: true})
		}
		g := &v.Groups[i]
		c := cardOf(now, r)
		c.Actions, c.CSRF = v.ActionsOn, s.csrf
		g.Cards = append(g.Cards, c)
		if r.GetReachable() {
			g.Unreachable = false
		} else if since := api.TimeOf(r.GetUnreachableSinceUnixNano()); g.Since.ISO == "" || since.Before(mustTime(g.Since.ISO)) {
			g.Since = stampOf(now, since)
		}
	}
	sort.SliceStable(v.Groups, func(i, j int) bool { return !v.Groups[i].Unreachable && v.Groups[j].Unreachable })
	return v
}

func mustTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// options are the filter's choices: the machines and agent kinds the
// roster has, and the selected value even when absent.
type options struct {
	Nodes, Agents, Activities, Lifecycles []string
}

func optionsOf(rows []Row, f Filter) options {
	nodes, agents := map[string]bool{}, map[string]bool{}
	for _, r := range rows {
		if !r.GetEnded() {
			nodes[r.GetNode()], agents[r.GetAgent()] = true, true
		}
	}
	nodes[f.Node], agents[f.Agent] = true, true
	keys := func(m map[string]bool) []string {
		var out []string
		for k := range m {
			if k != "" {
				out = append(out, k)
			}
		}
		sort.Strings(out)
		return out
	}
	return options{Nodes: keys(nodes), Agents: keys(agents), Activities: activities, Lifecycles: lifecycles}
}

// detail is the session page's data.
type detail struct {
	Row         Row
	Activity    string
	Lifecycle   string
	Short       string
	ActivityAt  stamp
	LifecycleAt stamp
	Evidence    stamp
	Started     stamp
	Ended       stamp
	Unreachable stamp
	Silent      stamp
	Events      []traceLine
	Compactions []compactionLine // the harn session's context.compacted events, newest first
	TraceErr    string
	Truncated   int
	ActionsOn   bool
	CSRF        string
	NowISO      string
}

// ActionData is the session's action forms' data (the card's fields the
// "actions" template reads).
func (d detail) ActionData() card {
	c := card{ID: d.Row.GetSessionId(), CSRF: d.CSRF, Requests: d.Row.PendingRequests}
	if d.Row.HasTask() {
		c.HarnTask = d.Row.GetHarnTask()
	}
	return c
}

// traceLine is one event of the trace.
type traceLine struct {
	When  stamp
	TS    string
	Type  string
	Seq   uint64
	Attrs []attr // sorted by key, at most maxAttrs
	More  int    // attributes not shown
}

// attr is one event attribute as a row of the trace's small table.
type attr struct{ Key, Value string }

// maxAttrs and maxAttrValue bound what one trace line shows.
const (
	maxAttrs     = 24
	maxAttrValue = 300
)

// attrsOf turns an event's attributes into sorted key/value rows: strings
// as they are, everything else as compact JSON, each sanitized and clipped.
func attrsOf(m map[string]any) ([]attr, int) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	more := 0
	if len(keys) > maxAttrs {
		more = len(keys) - maxAttrs
		keys = keys[:maxAttrs]
	}
	out := make([]attr, 0, len(keys))
	for _, k := range keys {
		var v string
		switch x := m[k].(type) {
		case string:
			v = x
		default:
			b, _ := json.Marshal(x)
			v = string(b)
		}
		out = append(out, attr{Key: text.Clip(text.Sanitize(k), 60), Value: text.Clip(text.Sanitize(v), maxAttrValue)})
	}
	return out, more
}

// maxTrace bounds the trace a page shows (newest first).
const maxTrace = 1000

func (s *Server) buildDetail(r Row, evs []presence.Event, traceErr error) detail {
	now := s.cfg.Clock.Now()
	r.PendingRequests = waited(now, r.PendingRequests)
	at := func(ns int64) stamp { return stampOf(now, api.TimeOf(ns)) }
	d := detail{Row: r, Activity: activityOf(r), Lifecycle: lifecycleOf(r), Short: short(r.GetSessionId()),
		ActivityAt: at(r.GetActivityUpdatedAtUnixNano()), LifecycleAt: at(r.GetTaskStateUpdatedAtUnixNano()),
		Evidence: stampOf(now, r.Evidence()), Started: at(r.GetStartedAtUnixNano()), Ended: at(r.GetEndedAtUnixNano()),
		Unreachable: at(r.GetUnreachableSinceUnixNano()), Silent: at(r.GetSilentSinceUnixNano()),
		ActionsOn: s.cfg.Actions != nil, CSRF: s.csrf, NowISO: now.UTC().Format(time.RFC3339Nano)}
	if traceErr != nil {
		d.TraceErr = text.OneLine(traceErr.Error())
	}
	evs = slices.Clone(evs)
	sort.SliceStable(evs, func(i, j int) bool {
		if !evs[i].TS.Equal(evs[j].TS) {
			return evs[i].TS.After(evs[j].TS)
		}
		return evs[i].ID > evs[j].ID
	})
	d.Compactions = s.compactionsOf(evs)
	if len(evs) > maxTrace {
		d.Truncated = len(evs) - maxTrace
		evs = evs[:maxTrace]
	}
	for _, e := range evs {
		l := traceLine{When: stampOf(now, e.TS), TS: presence.FormatTime(e.TS), Type: text.Sanitize(e.Type), Seq: e.Seq}
		if len(e.Attrs) > 0 {
			l.Attrs, l.More = attrsOf(e.Attrs)
		}
		d.Events = append(d.Events, l)
	}
	return d
}
