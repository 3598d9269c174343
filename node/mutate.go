package node

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"unicode/utf8"

	"github.com/harn-dev/harn/node/gitcheck"
	"github.com/harn-dev/harn/node/operator"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/raftstore"
	"github.com/harn-dev/harn/util/text"
)

// The refusals of an operator declaration and of bad input (node/operator).
var (
	ErrRefused    = operator.ErrRefused
	ErrBadRequest = operator.ErrBadRequest
)

// RefusedError names the check that refused a declaration.
type RefusedError = operator.RefusedError

// GitChecker runs the git finalization check.
type GitChecker interface {
	Check(ctx context.Context, cwd string, paths []string) error
}

type realGit struct{ cfg gitcheck.Config }

func (g realGit) Check(ctx context.Context, cwd string, paths []string) error {
	return gitcheck.Check(ctx, g.cfg, cwd, paths)
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
func (n *Node) Lifecycle(ctx context.Context, session string, to presence.TaskState, reason string) (LifecycleResult, error) {
	return n.LifecycleFrom(ctx, Caller{}, session, to, reason)
}

// LifecycleFrom is Lifecycle asked by caller: the caller rules
// (checkCaller) apply before the target's own.
func (n *Node) LifecycleFrom(ctx context.Context, caller Caller, session string, to presence.TaskState, reason string) (LifecycleResult, error) {
	st, unlock, err := n.sess.Lock(session)
	if err != nil {
		return LifecycleResult{}, err
	}
	defer unlock()
	if err := n.checkCaller(caller, st); err != nil {
		return LifecycleResult{}, err
	}
	decl, err := presence.Declare(&st, to, reason)
	if err != nil {
		check := "lifecycle"
		switch {
		case errors.Is(err, presence.ErrUnknownState), errors.Is(err, presence.ErrReasonTooLong):
			return LifecycleResult{}, fmt.Errorf("%w: %w", ErrBadRequest, err)
		case errors.Is(err, presence.ErrReasonRequired):
			check = "reason_required"
		case errors.Is(err, presence.ErrSubagent):
			check = "top_level_only"
		case errors.Is(err, presence.ErrNoTask):
			check = "current_task"
		}
		return LifecycleResult{}, &RefusedError{Check: check, Err: err}
	}
	if decl.Noop {
		return LifecycleResult{State: st}, nil
	}
	if to == presence.TaskDone {
		paths, err := n.claimHistory(st.SessionID)
		if err != nil {
			return LifecycleResult{}, err
		}
		if err := n.git.Check(ctx, st.Cwd, paths); err != nil {
			var ce *gitcheck.CheckError
			if errors.As(err, &ce) {
				return LifecycleResult{}, &RefusedError{Check: "git_" + ce.Check, Err: err}
			}
			return LifecycleResult{}, &RefusedError{Check: "git", Err: err}
		}
	}
	ev := presence.Event{SessionID: st.SessionID, ParentSessionID: st.ParentSessionID,
		Type: presence.TypeTaskState, TS: n.cfg.Clock.Now(), Agent: st.Agent, Attrs: decl.Attrs}
	if n.cl != nil {
		// This declaration writes the registry itself, below.
		defer n.cl.Writer().Hold(st.SessionID)()
	}
	if _, err := n.Ingest([]presence.Event{ev}); err != nil {
		return LifecycleResult{}, err
	}
	st, err = n.Resolve(st.SessionID)
	if err != nil {
		return LifecycleResult{}, err
	}
	res := LifecycleResult{State: st, Recorded: true}
	if n.cl != nil {
		// The acknowledgement means the change survives this node's loss.
		sctx, cancel := context.WithTimeout(ctx, n.cfg.Cluster.RegistrySyncTimeout)
		if err := n.cl.Writer().Sync(sctx, st); errors.Is(err, raftstore.ErrSessionTaken) || errors.Is(err, raftstore.ErrSessionQuota) {
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
func (n *Node) claimHistory(session string) ([]string, error) {
	evs, err := n.ledger.Session(session)
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
func (n *Node) SetTask(session, task string) (presence.State, string, error) {
	if task == "" {
		return presence.State{}, "", fmt.Errorf("%w: task text is empty; pass the task as an argument", ErrBadRequest)
	}
	if c := utf8.RuneCountInString(task); c > presence.MaxTaskChars {
		return presence.State{}, "", fmt.Errorf("%w: task is %d characters; at most %d", ErrBadRequest, c, presence.MaxTaskChars)
	}
	st, unlock, err := n.sess.Lock(session)
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
		Type: presence.TypeTaskSet, TS: n.cfg.Clock.Now(), Agent: st.Agent,
		Attrs: map[string]any{presence.AttrTask: task}}
	if _, err := n.Ingest([]presence.Event{ev}); err != nil {
		return st, "", err
	}
	st, err = n.Resolve(st.SessionID)
	return st, warn, err
}

// Claim records write claims (absolute paths) for a session.
func (n *Node) Claim(session string, paths []string) (presence.State, error) {
	if len(paths) == 0 {
		return presence.State{}, fmt.Errorf("%w: no paths; pass the files the session writes", ErrBadRequest)
	}
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			return presence.State{}, fmt.Errorf("%w: path %q is not absolute", ErrBadRequest, p)
		}
	}
	st, err := n.Resolve(session)
	if err != nil {
		return st, err
	}
	ev := presence.Event{SessionID: st.SessionID, ParentSessionID: st.ParentSessionID,
		Type: presence.TypeClaimWrite, TS: n.cfg.Clock.Now(), Agent: st.Agent,
		Attrs: map[string]any{presence.AttrPaths: paths}}
	if _, err := n.Ingest([]presence.Event{ev}); err != nil {
		if errors.Is(err, presence.ErrInvalidEvent) {
			return st, fmt.Errorf("%w: %w", ErrBadRequest, err)
		}
		return st, err
	}
	return n.Resolve(st.SessionID)
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
func (n *Node) Whoami(ancestry []Proc) (presence.State, error) {
	live := n.sess.Live()
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
	return presence.State{}, fmt.Errorf("%w: no live session belongs to a process above this one; pass --session or set HARN_SESSION", ErrUnknownSession)
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
