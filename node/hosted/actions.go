package hosted

import (
	"fmt"
	"strings"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/text"
)

// The event types and attributes the room records. Unknown types are
// stored and change no state (presence): each records an operator's
// action on a hosted agent, by whom.
const (
	TypeSteer        = "hosted.steer"
	TypeFollowUp     = "hosted.follow_up"
	TypeFollowUpSent = "hosted.follow_up.sent"
	TypeInterrupt    = "hosted.interrupt"
	TypeStop         = "hosted.stop"
	TypeAttach       = "hosted.attach"

	// AttrHosted marks a hosted session's start; AttrWorktree is its
	// worktree; AttrHostedID is the hosted session a hook's events claim
	// (tie.go); AttrAgentSession the agent's own id for that session.
	AttrHosted       = "hosted"
	AttrWorktree     = "worktree"
	AttrHostedID     = "hosted_id"
	AttrAgentSession = "agent_session_id"
)

// Result says what an action did.
type Result struct {
	// Mode: "typed" (steer, or a follow-up typed at once), "queued" (a
	// follow-up held for the turn's stop), "sent" (the interrupt key),
	// "stopping".
	Mode string
	// Queued is how many follow-ups the session holds after it.
	Queued  int
	Message string
}

// clean is a steer's or follow-up's text as it is typed: one line (a
// newline would send it early), no control character (nothing typed may
// be a key such as Esc), bounded.
func clean(t string) (string, error) {
	if len(t) > MaxText {
		return "", fmt.Errorf("%w: the text is %d bytes; at most %d", ErrBadStart, len(t), MaxText)
	}
	t = text.OneLine(t)
	if t == "" {
		return "", fmt.Errorf("%w: no text to type; give TEXT", ErrBadStart)
	}
	return t, nil
}

func (r *Room) textAttrs(by, t string) map[string]any {
	a := map[string]any{presence.AttrBy: text.Clip(by, 160), "bytes": len(t)}
	if r.cfg.Digest != nil {
		a[presence.AttrDigest] = r.cfg.Digest([]byte(t))
	}
	return a
}

// Steer types t and Enter into session id's terminal now: the agent takes
// it as it takes typed input during a turn (Claude Code and Codex send it
// into the running turn).
func (r *Room) Steer(id, t, by string) (Result, error) {
	s, err := r.lookup(id)
	if err != nil {
		return Result{}, err
	}
	t, err = clean(t)
	if err != nil {
		return Result{}, err
	}
	if err := s.typeText(t); err != nil {
		return Result{}, err
	}
	r.record(s, TypeSteer, r.textAttrs(by, t))
	return Result{Mode: "typed", Message: "typed into the hosted terminal of " + id}, nil
}

// FollowUp holds t until the session's turn stops (its turn.stop), then
// types it; held follow-ups go in order, one per stop. With no turn open
// it is typed at once.
func (r *Room) FollowUp(id, t, by string) (Result, error) {
	s, err := r.lookup(id)
	if err != nil {
		return Result{}, err
	}
	t, err = clean(t)
	if err != nil {
		return Result{}, err
	}
	s.mu.Lock()
	if !s.busy && len(s.queue) == 0 {
		s.busy = true
		s.mu.Unlock()
		if err := s.typeText(t); err != nil {
			s.mu.Lock()
			s.busy = false
			s.mu.Unlock()
			return Result{}, err
		}
		attrs := r.textAttrs(by, t)
		attrs["mode"] = "typed"
		r.record(s, TypeFollowUp, attrs)
		return Result{Mode: "typed", Message: "no turn was open: typed into the hosted terminal of " + id}, nil
	}
	if len(s.queue) >= MaxQueued {
		s.mu.Unlock()
		return Result{}, fmt.Errorf("%w: %s holds %d follow-ups; wait for its turn to stop", ErrQueueFull, id, MaxQueued)
	}
	s.queue = append(s.queue, t)
	n := len(s.queue)
	s.mu.Unlock()
	attrs := r.textAttrs(by, t)
	attrs["mode"], attrs["position"] = "queued", n
	r.record(s, TypeFollowUp, attrs)
	return Result{Mode: "queued", Queued: n, Message: fmt.Sprintf("held for the end of the turn (%d waiting)", n)}, nil
}

// Interrupt sends the agent's interrupt key (Esc).
func (r *Room) Interrupt(id, by string) (Result, error) {
	s, err := r.lookup(id)
	if err != nil {
		return Result{}, err
	}
	key := s.spec.Interrupt
	if len(key) == 0 {
		key = []byte{0x1b}
	}
	if err := s.write(key); err != nil {
		return Result{}, err
	}
	r.record(s, TypeInterrupt, map[string]any{presence.AttrBy: text.Clip(by, 160)})
	return Result{Mode: "sent", Message: "sent the interrupt key to " + id}, nil
}

// Stop ends the session's process: SIGTERM, then SIGKILL after the grace
// period. Its end is recorded when the process is gone.
func (r *Room) Stop(id, by string) (Result, error) {
	s, err := r.lookup(id)
	if err != nil {
		return Result{}, err
	}
	r.record(s, TypeStop, map[string]any{presence.AttrBy: text.Clip(by, 160)})
	s.stop("stopped by "+text.Clip(text.OneLine(by), 120), r.cfg.Grace)
	return Result{Mode: "stopping", Message: fmt.Sprintf("stopping %s (SIGTERM, then SIGKILL after %s)", id, r.cfg.Grace)}, nil
}

// Wait returns a channel closed when session id's process has ended
// (closed at once for one the room does not host).
func (r *Room) Wait(id string) <-chan struct{} {
	if s := r.anySession(id); s != nil {
		return s.done
	}
	c := make(chan struct{})
	close(c)
	return c
}

// Peek is the last lines of session id's screen (bounded, control
// characters stripped); the node shows them while the session needs
// input.
func (r *Room) Peek(id string) []string {
	s, err := r.lookup(id)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peekLocked()
}

// Screen is session id's screen as text (control characters stripped),
// for the board.
func (r *Room) Screen(id string) ([]string, bool) {
	s, err := r.lookup(id)
	if err != nil {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	lines := strings.Split(s.emu.String(), "\n")
	for i, l := range lines {
		lines[i] = text.Sanitize(l)
	}
	return lines, true
}

// Observe follows the turns of the hosted sessions from the node's
// stored events: a prompt or a tool opens a turn, its stop closes it and
// types the next held follow-up; an operator prompt marks the session as
// waiting for input (its peek republishes as its screen changes).
func (r *Room) Observe(evs []presence.Event) {
	for i := range evs {
		e := &evs[i]
		if !strings.HasPrefix(e.SessionID, "hs-") {
			continue
		}
		s, err := r.lookup(e.SessionID)
		if err != nil {
			continue
		}
		var next string
		s.mu.Lock()
		switch e.Type {
		case presence.TypeUserPromptSubmit, presence.TypeToolPreUse, presence.TypeCommandStart, presence.TypeInputResolved:
			s.busy, s.needsInput = true, false
		case presence.TypeInputRequested:
			s.busy, s.needsInput = true, true
			s.lastPeek, s.peekAt = strings.Join(s.peekLocked(), "\n"), r.cfg.Clock.Now()
		case presence.TypeTurnStop, presence.TypeSessionEnd:
			s.busy, s.needsInput = false, false
			if len(s.queue) > 0 && e.Type == presence.TypeTurnStop {
				next, s.queue = s.queue[0], s.queue[1:]
				s.busy = true
			}
		}
		s.mu.Unlock()
		if next != "" {
			// Typed off the ingest path: a write may wait on the terminal.
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				if err := s.typeText(next); err != nil {
					r.log.Warn("hosted: a held follow-up was not typed", "session", s.id, "err", err)
					return
				}
				r.record(s, TypeFollowUpSent, map[string]any{presence.AttrDigest: r.digest(next)})
			}()
		}
	}
}

func (r *Room) digest(t string) string {
	if r.cfg.Digest == nil {
		return ""
	}
	return r.cfg.Digest([]byte(t))
}
