package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/harn-dev/harn/node/tasks/taskwire"
	"github.com/harn-dev/harn/util/clock"
	"github.com/harn-dev/harn/util/ids"
	"github.com/harn-dev/harn/util/text"
)

// Errors of the approvals.
var (
	ErrNoRequest = errors.New("tasks: no such open permission request")
	ErrExpired   = errors.New("tasks: the permission request is no longer waiting (its hook gave up; the agent showed its own prompt)")
	ErrAnswered  = errors.New("tasks: the permission request was already answered")
	ErrTooMany   = errors.New("tasks: too many open permission requests on this node")
	// ErrNotSessionWide refuses "allow for this session" for an agent
	// that cannot take it.
	ErrNotSessionWide = errors.New("this agent cannot take \"allow for this session\"; approve this request alone (without --session-wide)")
)

// AnsweredError refuses a second answer and names the first.
type AnsweredError struct {
	Request string
	First   Answer
}

func (e *AnsweredError) Error() string {
	verb := "denied"
	if e.First.Allow {
		verb = "approved"
	}
	return fmt.Sprintf("%s: request %s was %s by %s at %s", ErrAnswered, e.Request, verb, e.First.By,
		e.First.At.UTC().Format(time.RFC3339))
}

func (e *AnsweredError) Unwrap() error { return ErrAnswered }

// Bounds of the approvals.
const (
	maxOpen      = 256
	keepAnswered = 256
	summaryChars = 80
)

type openReq struct {
	req Request
	ch  chan Answer
}

// Approvals holds a node's open permission requests and the recent
// answered or expired ones (to refuse a second answer by naming the
// first).
type Approvals struct {
	node  string
	clock clock.Clock

	mu    sync.Mutex
	open  map[string]*openReq
	done  map[string]Request
	order []string // done, oldest first
	// onChange is told after a request opens, is answered or expires.
	onChange func()
	// onAnswer is told of each answer, before the waiting hook is.
	onAnswer func(Request)
}

// OnAnswer sets f to be called with each answered request (outside the
// lock, before the hook that waits gets the answer): the node records the
// answer as the session's interaction.input_resolved.
func (a *Approvals) OnAnswer(f func(Request)) {
	a.mu.Lock()
	a.onAnswer = f
	a.mu.Unlock()
}

// OnChange sets f to be called (outside the lock) after a request opens,
// is answered or expires: the node repaints its board.
func (a *Approvals) OnChange(f func()) {
	a.mu.Lock()
	a.onChange = f
	a.mu.Unlock()
}

func (a *Approvals) changed() {
	a.mu.Lock()
	f := a.onChange
	a.mu.Unlock()
	if f != nil {
		f()
	}
}

// NewApprovals returns an empty set.
func NewApprovals(node string, clk clock.Clock) *Approvals {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Approvals{node: node, clock: clk, open: map[string]*openReq{}, done: map[string]Request{}}
}

// Await opens r, waits up to wait for an answer from anywhere, and closes
// it. ok is false when no answer came in time (or ctx ended).
func (a *Approvals) Await(ctx context.Context, r Request, wait time.Duration) (Request, Answer, bool, error) {
	r.ID = taskwire.RequestID(ids.New(a.clock.Now()), a.node)
	r.Node, r.Opened, r.Kind = a.node, a.clock.Now(), KindPermission
	ch := make(chan Answer, 1)
	a.mu.Lock()
	if len(a.open) >= maxOpen {
		a.mu.Unlock()
		return r, Answer{}, false, ErrTooMany
	}
	a.open[r.ID] = &openReq{req: r, ch: ch}
	a.mu.Unlock()
	a.changed()
	defer a.changed()
	t := a.clock.NewTimer(wait)
	defer t.Stop()
	select {
	case ans := <-ch:
		return r, ans, true, nil
	case <-t.C():
	case <-ctx.Done():
	}
	a.mu.Lock()
	if o := a.open[r.ID]; o != nil {
		delete(a.open, r.ID)
		a.finishLocked(o.req)
		a.mu.Unlock()
		return r, Answer{}, false, nil
	}
	a.mu.Unlock()
	// Answered in the same instant the wait ended: the answer wins. Answer
	// took the request out of open and sends once it is recorded.
	return r, <-ch, true, nil
}

func (a *Approvals) finishLocked(r Request) {
	a.done[r.ID] = r
	a.order = append(a.order, r.ID)
	for len(a.order) > keepAnswered {
		delete(a.done, a.order[0])
		a.order = a.order[1:]
	}
}

// Answer answers an open request. A second answer is refused with an
// *AnsweredError naming the first; a request whose hook gave up is
// ErrExpired; an unknown one ErrNoRequest.
func (a *Approvals) Answer(id string, allow bool, by, reason string) (Request, error) {
	return a.AnswerWith(id, allow, false, by, reason)
}

// AnswerWith is Answer with "allow for this session" (sessionWide, with
// allow): refused with ErrNotSessionWide when the request's agent cannot
// take it.
func (a *Approvals) AnswerWith(id string, allow, sessionWide bool, by, reason string) (Request, error) {
	defer a.changed()
	a.mu.Lock()
	if o := a.open[id]; o != nil {
		if sessionWide && allow && !o.req.SessionWide {
			a.mu.Unlock()
			return o.req, fmt.Errorf("%w: request %s (%s)", ErrNotSessionWide, id, o.req.Agent)
		}
		ans := Answer{Allow: allow, SessionWide: sessionWide && allow, By: text.Clip(by, 200), Reason: text.Clip(reason, 400), At: a.clock.Now()}
		delete(a.open, id)
		o.req.Answer = &ans
		a.finishLocked(o.req)
		f := a.onAnswer
		a.mu.Unlock()
		// The answer is evidence before the hook acts on it: the agent's
		// next event then sorts after it.
		if f != nil {
			f(o.req)
		}
		o.ch <- ans
		return o.req, nil
	}
	defer a.mu.Unlock()
	if d, ok := a.done[id]; ok {
		if d.Answer != nil {
			return d, &AnsweredError{Request: id, First: *d.Answer}
		}
		return d, fmt.Errorf("%w: request %s", ErrExpired, id)
	}
	return Request{}, fmt.Errorf("%w %q", ErrNoRequest, id)
}

// Has reports whether id is a request of this node (open or recently
// closed).
func (a *Approvals) Has(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, open := a.open[id]
	_, done := a.done[id]
	return open || done
}

// List returns the open requests, oldest first.
func (a *Approvals) List() []Request {
	a.mu.Lock()
	out := make([]Request, 0, len(a.open))
	for _, o := range a.open {
		out = append(out, o.req)
	}
	a.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Opened.Equal(out[j].Opened) {
			return out[i].Opened.Before(out[j].Opened)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// Summarize is a short, safe summary of a tool call for an operator
// elsewhere: the program a shell command runs (not its arguments, which
// may hold secrets), or the base name of the file a file tool touches.
func Summarize(tool string, input []byte) string {
	var in map[string]any
	_ = json.Unmarshal(input, &in)
	str := func(k string) string { s, _ := in[k].(string); return s }
	var s string
	switch {
	case str("command") != "":
		f := strings.Fields(str("command"))
		if len(f) > 0 {
			s = "runs " + filepath.Base(f[0])
			if len(f) > 1 {
				s += " …"
			}
		}
	case str("file_path") != "":
		s = "file " + filepath.Base(str("file_path"))
	case str("notebook_path") != "":
		s = "notebook " + filepath.Base(str("notebook_path"))
	case str("path") != "":
		s = "path " + filepath.Base(str("path"))
	case str("url") != "":
		s = "url"
	}
	if s == "" {
		return text.Clip(text.OneLine(tool), summaryChars)
	}
	return text.Clip(text.OneLine(tool+": "+s), summaryChars)
}
