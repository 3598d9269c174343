package web

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/board"
	"github.com/harn-dev/harn/node/cluster"
	"github.com/harn-dev/harn/node/sessions"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/presence"
)

// UrgencyLess is the order of `harn agents list`: presence.CompareUrgency.
func UrgencyLess(a, b board.Row) bool {
	return presence.CompareUrgency(a.UrgencyKey(), b.UrgencyKey()) < 0
}

// webSource is the board's Source over the node's mesh-wide roster.
type webSource struct{ w *Web }

func (s webSource) Roster(ctx context.Context) ([]board.Row, error) {
	rows, err := s.w.Rows(ctx)
	if err != nil {
		return nil, err
	}
	asking := map[string]bool{} // nodes with a session waiting on input
	for i := range rows {
		if !rows[i].GetEnded() && rows[i].GetActivity() == string(presence.ActivityNeedsInput) {
			asking[rows[i].GetNode()] = true
		}
	}
	s.w.addPending(ctx, rows, asking)
	return rows, nil
}

func (s webSource) Session(ctx context.Context, handle string) (board.Row, error) {
	r, err := s.w.Row(ctx, handle)
	if err != nil {
		return board.Row{}, notFound(err)
	}
	rows := []board.Row{r}
	s.w.addPending(ctx, rows, map[string]bool{r.GetNode(): r.GetActivity() == string(presence.ActivityNeedsInput)})
	return rows[0], nil
}

func (s webSource) Trace(ctx context.Context, handle string) ([]presence.Event, error) {
	evs, err := s.w.Trace(ctx, handle)
	if err != nil {
		return nil, notFound(err)
	}
	return evs, nil
}

func (s webSource) Changes() (<-chan struct{}, func()) { return s.w.Changes.Subscribe() }

func notFound(err error) error {
	if errors.Is(err, sessions.ErrUnknownSession) {
		return fmt.Errorf("%w: %w", board.ErrNotFound, err)
	}
	return err
}

// pendingTTL is how long a peer's list of open permission requests is
// reused by board reads.
const pendingTTL = time.Second

// pendingCache keeps the peers' open permission requests briefly, so
// that a board repainting several times a second asks each peer at most
// once a second.
type pendingCache struct {
	mu    sync.Mutex
	nodes map[string]pendingEntry
}

type pendingEntry struct {
	at   time.Time
	reqs []tasks.Request
}

// addPending adds the waiting calls (open permission requests and task
// confirmations, with what each asks) to the rows of their sessions:
// this node's own, and those of the peers in asking (the nodes with a
// session waiting on input). A confirmation the row already names (its
// harn task's pending calls) gets its facts in place.
func (w *Web) addPending(ctx context.Context, rows []board.Row, asking map[string]bool) {
	reqs := w.Waiting()
	if w.Mesh() != nil {
		for node, ask := range asking {
			if ask && node != w.Node {
				reqs = append(reqs, w.peerPending(ctx, node)...)
			}
		}
	}
	if len(reqs) == 0 {
		return
	}
	sort.SliceStable(reqs, func(i, j int) bool { return reqs[i].Opened.Before(reqs[j].Opened) })
	bySession := map[string][]board.Request{}
	for _, r := range reqs {
		bySession[r.Session] = append(bySession[r.Session], boardRequest(r))
	}
	for i := range rows {
		rs := bySession[rows[i].GetSessionId()]
		if len(rs) == 0 {
			continue
		}
		var add []board.Request
		for _, q := range rs {
			if j := slices.IndexFunc(rows[i].PendingRequests, func(p board.Request) bool {
				return p.Kind == q.Kind && p.ID == q.ID
			}); j >= 0 {
				rows[i].PendingRequests[j] = q
				continue
			}
			add = append(add, q)
		}
		rows[i].PendingRequests = append(add, rows[i].PendingRequests...)
	}
}

// boardRequest is a waiting call as the board shows it.
func boardRequest(r tasks.Request) board.Request {
	sum := r.Summary // tasks.Summarize names the tool
	if sum == "" {
		sum = r.Tool
	}
	kind := r.Kind
	if kind == "" {
		kind = tasks.KindPermission
	}
	return board.Request{ID: r.ID, Kind: kind, TaskID: r.Task, Summary: sum, Tool: r.Tool, Agent: r.Agent,
		Detail: r.Detail, Command: r.Command, CommandCut: r.CommandCut, Path: r.Path, Diff: r.Diff, DiffCut: r.DiffCut,
		Cwd: r.Cwd, Handle: r.Handle(), Place: r.Place(), Opened: r.Opened, SessionWide: r.SessionWide}
}

// peerPending returns a reachable peer's open permission requests, from
// the cache when fresh.
func (w *Web) peerPending(ctx context.Context, node string) []tasks.Request {
	now := w.Clock.Now()
	w.pending.mu.Lock()
	if e, ok := w.pending.nodes[node]; ok && now.Sub(e.at) < pendingTTL {
		w.pending.mu.Unlock()
		return e.reqs
	}
	w.pending.mu.Unlock()
	if up, known := w.Members()[node]; !known || !up {
		return nil
	}
	cl, err := w.Mesh().ClientOf(node)
	if err != nil {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, w.OwnerReadTimeout)
	res, err := cl.Pending(rctx, &api.PendingRequest{LocalOnly: true})
	cancel()
	if err == nil {
		err = cluster.CheckPeerList("node "+node, "pending requests", len(res.Requests))
	}
	var out []tasks.Request
	if err == nil {
		for _, r := range res.Requests {
			out = append(out, tasks.RequestFromAPI(r))
		}
	}
	w.pending.mu.Lock()
	if w.pending.nodes == nil {
		w.pending.nodes = map[string]pendingEntry{}
	}
	w.pending.nodes[node] = pendingEntry{at: now, reqs: out}
	w.pending.mu.Unlock()
	return out
}

// webActions are the board's actions: the same local service methods the
// CLI calls (`harn agents approve|deny`, `harn task ...`), so that the
// routing and the mesh's authority rules are the CLI's.
type webActions struct {
	w            *Web
	board.Hoster // the hosted pages
}

func (a webActions) by() string { return "board@" + a.w.Node }

func (a webActions) answer(ctx context.Context, r board.ActionRequest, allow bool) (string, error) {
	if r.Kind == "confirmation" {
		op := tasks.OpConfirm
		if !allow {
			op = tasks.OpDeny
		}
		return a.task(ctx, tasks.Action{Op: op, Task: r.TaskID, Call: r.RequestID, Reason: r.Text})
	}
	res, err := a.w.Tasks.Answer(ctx, &api.AnswerRequest{Request: r.RequestID, Allow: allow,
		Reason: r.Text, By: a.by(), SessionWide: allow && r.SessionWide})
	if err != nil {
		return "", actionErr(err)
	}
	q := tasks.RequestFromAPI(res.Request)
	verb := "denied"
	if allow {
		verb = "approved"
	}
	return fmt.Sprintf("%s %s (%s on %s)", verb, q.ID, q.Tool, q.Node), nil
}

func (a webActions) task(ctx context.Context, act tasks.Action) (string, error) {
	act.By = a.by()
	res, err := a.w.Tasks.Task(ctx, &api.TaskRequest{Action: tasks.ActionToAPI(act)})
	if err != nil {
		return "", actionErr(err)
	}
	r, _ := tasks.ResultFromAPI(res.Result)
	if r.Message != "" {
		return r.Message, nil
	}
	msg := act.Op + " done on " + res.Node
	if r.Task != nil {
		msg = fmt.Sprintf("%s: task %s is %s (on %s)", act.Op, r.Task.ID, r.Task.State, res.Node)
	}
	return msg, nil
}

// actionErr turns a service error into the board's: the status message,
// and ErrUnsupported for what this node cannot do.
func actionErr(err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	if st.Code() == codes.Unimplemented {
		return fmt.Errorf("%w: %s", board.ErrUnsupported, st.Message())
	}
	return errors.New(st.Message())
}

func (a webActions) Approve(ctx context.Context, r board.ActionRequest) (string, error) {
	return a.answer(ctx, r, true)
}

func (a webActions) Deny(ctx context.Context, r board.ActionRequest) (string, error) {
	return a.answer(ctx, r, false)
}

func (a webActions) Steer(ctx context.Context, r board.ActionRequest) (string, error) {
	return a.task(ctx, tasks.Action{Op: tasks.OpSteer, Session: r.SessionID, Text: r.Text})
}

func (a webActions) FollowUp(ctx context.Context, r board.ActionRequest) (string, error) {
	return a.task(ctx, tasks.Action{Op: tasks.OpFollowUp, Session: r.SessionID, Text: r.Text})
}

func (a webActions) Cancel(ctx context.Context, r board.ActionRequest) (string, error) {
	return a.task(ctx, tasks.Action{Op: tasks.OpCancel, Task: r.TaskID, Reason: r.Text})
}
