// Package declare is the room of an agent's and an operator's
// declarations about a session of this node: its lifecycle (`harn agents
// lifecycle`, with the caller rules, the top-level and current-task
// rules and the git finalization check for done), its task text, its
// claimed paths, and which live session a process belongs to (whoami).
// Each is one event, ingested; a lifecycle change also goes to the
// registry at once. It reads the rest of the node through Deps.
package declare

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"time"
	"unicode/utf8"

	"github.com/harn-dev/harn/node/gitcheck"
	"github.com/harn-dev/harn/node/operator"
	"github.com/harn-dev/harn/node/sessions"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/raftstore"
	"github.com/harn-dev/harn/util/clock"
	"github.com/harn-dev/harn/util/text"
)

// Writer is the registry writer's part a declaration uses.
type Writer interface {
	Hold(id string) func()
	Sync(ctx context.Context, s presence.State) error
}

// Ledger is what a declaration reads of the ledger.
type Ledger interface {
	Session(id string) ([]presence.Event, error)
}

// Deps wires the room to the rest of the node.
type Deps struct {
	Clock    clock.Clock
	Sessions *sessions.Store
	Ledger   Ledger
	Git      GitChecker
	// Ingest records events; Writer is the registry writer, nil without
	// the mesh; SyncTimeout bounds a lifecycle's registry write.
	Ingest      func([]presence.Event) error
	Writer      func() Writer
	SyncTimeout time.Duration
}

// Declarer is the declarations' room.
type Declarer struct{ Deps }

// New builds the room. It does no I/O.
func New(d Deps) *Declarer { return &Declarer{Deps: d} }

func (d *Declarer) ingest(evs []presence.Event) (struct{}, error) { return struct{}{}, d.Ingest(evs) }

// GitChecker runs the git finalization check.
type GitChecker interface {
	Check(ctx context.Context, cwd string, paths []string) error
}

// GitCLI runs the check with the git CLI.
type GitCLI struct{ Config gitcheck.Config }

// Check runs the git finalization check.
func (g GitCLI) Check(ctx context.Context, cwd string, paths []string) error {
	return gitcheck.Check(ctx, g.Config, cwd, paths)
}

// LifecycleResult is the outcome of a declaration.
type LifecycleResult struct {
	State    presence.State
	Recorded bool
	// Note tells when the registry write is still pending.
	Note string
}

// Lifecycle declares a task state for a session, enforcing every rule: a
// reason for blocked, top-level sessions only, a current task and a passing
// git finalization check for done. Repeating the current state and reason
// records nothing.
//
// Declarations about one session are serialized; those about different
// sessions run side by side (a slow git check or registry write stalls
// only its own session).
func (d *Declarer) Lifecycle(ctx context.Context, session string, to presence.TaskState, reason string) (LifecycleResult, error) {
	return d.LifecycleFrom(ctx, Caller{}, session, to, reason)
}

// LifecycleFrom is Lifecycle asked by caller: the caller rules
// (checkCaller) apply before the target's own.
func (d *Declarer) LifecycleFrom(ctx context.Context, caller Caller, session string, to presence.TaskState, reason string) (LifecycleResult, error) {
	st, unlock, err := d.Sessions.Lock(session)
	if err != nil {
		return LifecycleResult{}, err
	}
	defer unlock()
	if err := d.checkCaller(caller, st); err != nil {
		return LifecycleResult{}, err
	}
	decl, err := presence.Declare(&st, to, reason)
	if err != nil {
		check := "lifecycle"
		switch {
		case errors.Is(err, presence.ErrUnknownState), errors.Is(err, presence.ErrReasonTooLong):
			return LifecycleResult{}, fmt.Errorf("%w: %w", operator.ErrBadRequest, err)
		case errors.Is(err, presence.ErrReasonRequired):
			check = "reason_required"
		case errors.Is(err, presence.ErrSubagent):
			check = "top_level_only"
		case errors.Is(err, presence.ErrNoTask):
			check = "current_task"
		}
		return LifecycleResult{}, &operator.RefusedError{Check: check, Err: err}
	}
	if decl.Noop {
		return LifecycleResult{State: st}, nil
	}
	if to == presence.TaskDone {
		paths, err := d.claimHistory(st.SessionID)
		if err != nil {
			return LifecycleResult{}, err
		}
		if err := d.Git.Check(ctx, st.Cwd, paths); err != nil {
			var ce *gitcheck.CheckError
			if errors.As(err, &ce) {
				return LifecycleResult{}, &operator.RefusedError{Check: "git_" + ce.Check, Err: err}
			}
			return LifecycleResult{}, &operator.RefusedError{Check: "git", Err: err}
		}
	}
	ev := presence.Event{SessionID: st.SessionID, ParentSessionID: st.ParentSessionID,
		Type: presence.TypeTaskState, TS: d.Clock.Now(), Agent: st.Agent, Attrs: decl.Attrs}
	w := d.Writer()
	if w != nil {
		// This declaration writes the registry itself, below.
		defer w.Hold(st.SessionID)()
	}
	if _, err := d.ingest([]presence.Event{ev}); err != nil {
		return LifecycleResult{}, err
	}
	st, err = d.Sessions.Resolve(st.SessionID)
	if err != nil {
		return LifecycleResult{}, err
	}
	res := LifecycleResult{State: st, Recorded: true}
	if w != nil {
		// The acknowledgement means the change survives this node's loss.
		sctx, cancel := context.WithTimeout(ctx, d.SyncTimeout)
		if err := w.Sync(sctx, st); errors.Is(err, raftstore.ErrSessionTaken) || errors.Is(err, raftstore.ErrSessionQuota) {
			res.Note = "recorded in this node's ledger; the mesh's registry refuses this session (" + text.OneLine(err.Error()) + ")"
		} else if err != nil {
			res.Note = "recorded in this node's ledger; the registry write is pending (" + text.OneLine(err.Error()) + ")"
		}
		cancel()
	}
	return res, nil
}

// claimHistory is the session's durable write-claim history from the
// ledger (the live state keeps a bounded set).
func (d *Declarer) claimHistory(session string) ([]string, error) {
	evs, err := d.Ledger.Session(session)
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for i := range evs {
		if evs[i].Type == presence.TypeClaimWrite {
			for _, p := range evs[i].AttrStrings(presence.AttrPaths) {
				set[p] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}

// SetTask sets the task text. It is lifecycle-neutral: while blocked or
// done it records the text and returns a warning, and does not reopen.
func (d *Declarer) SetTask(session, task string) (presence.State, string, error) {
	if task == "" {
		return presence.State{}, "", fmt.Errorf("%w: task text is empty; pass the task as an argument", operator.ErrBadRequest)
	}
	if c := utf8.RuneCountInString(task); c > presence.MaxTaskChars {
		return presence.State{}, "", fmt.Errorf("%w: task is %d characters; at most %d", operator.ErrBadRequest, c, presence.MaxTaskChars)
	}
	st, unlock, err := d.Sessions.Lock(session)
	if err != nil {
		return st, "", err
	}
	defer unlock()
	var warn string
	if st.TaskState != presence.TaskActive {
		warn = fmt.Sprintf("the task is %s; set-task does not reopen it — run `harn agents lifecycle active` to resume", st.TaskState)
	}
	if st.Task == task {
		return st, warn, nil
	}
	ev := presence.Event{SessionID: st.SessionID, ParentSessionID: st.ParentSessionID,
		Type: presence.TypeTaskSet, TS: d.Clock.Now(), Agent: st.Agent,
		Attrs: map[string]any{presence.AttrTask: task}}
	if _, err := d.ingest([]presence.Event{ev}); err != nil {
		return st, "", err
	}
	st, err = d.Sessions.Resolve(st.SessionID)
	return st, warn, err
}

// Claim records write claims (absolute paths) for a session.
func (d *Declarer) Claim(session string, paths []string) (presence.State, error) {
	if len(paths) == 0 {
		return presence.State{}, fmt.Errorf("%w: no paths; pass the files the session writes", operator.ErrBadRequest)
	}
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			return presence.State{}, fmt.Errorf("%w: path %q is not absolute", operator.ErrBadRequest, p)
		}
	}
	st, err := d.Sessions.Resolve(session)
	if err != nil {
		return st, err
	}
	ev := presence.Event{SessionID: st.SessionID, ParentSessionID: st.ParentSessionID,
		Type: presence.TypeClaimWrite, TS: d.Clock.Now(), Agent: st.Agent,
		Attrs: map[string]any{presence.AttrPaths: paths}}
	if _, err := d.ingest([]presence.Event{ev}); err != nil {
		if errors.Is(err, presence.ErrInvalidEvent) {
			return st, fmt.Errorf("%w: %w", operator.ErrBadRequest, err)
		}
		return st, err
	}
	return d.Sessions.Resolve(st.SessionID)
}

// Proc is a process in a caller's ancestry.
type Proc struct {
	PID   int
	Start uint64
}

// Whoami finds the live session whose recorded agent process is the
// nearest in the caller's ancestry. Subagents run inside their parent's
// process, so several sessions can share it: the one with the latest
// event is the caller (a command runs inside the tool call its session
// just announced), and on a tie the subagent. So a subagent resolves to
// itself, never to its parent, and its operator declarations are refused.
func (d *Declarer) Whoami(ancestry []Proc) (presence.State, error) {
	live := d.Sessions.Live()
	for _, p := range ancestry {
		var best *presence.State
		for i := range live {
			s := &live[i]
			if s.AgentPID != p.PID || (p.Start != 0 && s.AgentPIDStart != 0 && s.AgentPIDStart != p.Start) {
				continue
			}
			if best == nil || callerBefore(s, best) {
				best = s
			}
		}
		if best != nil {
			return *best, nil
		}
	}
	return presence.State{}, fmt.Errorf("%w: no live session belongs to a process above this one; pass --session or set HARN_SESSION", sessions.ErrUnknownSession)
}

// callerBefore orders the sessions of one agent process by how likely
// each is the caller: the latest event first, then a subagent, then by id.
func callerBefore(a, b *presence.State) bool {
	if !a.LastEventAt.Equal(b.LastEventAt) {
		return a.LastEventAt.After(b.LastEventAt)
	}
	if a.IsSubagent() != b.IsSubagent() {
		return a.IsSubagent()
	}
	return a.SessionID < b.SessionID
}
