package notifysvc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/harn-dev/harn/node/acttoken"
	"github.com/harn-dev/harn/node/board"
	"github.com/harn-dev/harn/node/notify"
	"github.com/harn-dev/harn/node/tasks"
)

// The Approve and Deny buttons of a needs_input notification (ntfy's http
// actions): each carries a one-decision token (node/acttoken), minted
// when the message for an ntfy webhook is built, kept as a hash in the
// ledger, bounded in count and time, and closed with its request. The
// board's POST /act spends it and answers the request as `harn agents
// approve|deny` does, by ActionBy@node: the same
// interaction.input_resolved, the same dropped notifications.

// ActionBy is who a button's answer names (with "@" and the node).
const ActionBy = "ntfy-action"

// openActTokens opens the token store on the ledger.
func (s *Service) openActTokens() {
	s.acts = acttoken.Open(acttoken.Config{Clock: s.Clock, KV: s.Meta, Logger: s.Log.With("room", "acttoken")})
}

// ApprovalsChanged is told when a request opens, is answered or expires:
// the board repaints, and the tokens of closed requests close.
func (s *Service) ApprovalsChanged() {
	s.OnApprovals()
	if s.acts == nil || s.Tasks() == nil {
		return
	}
	open := map[string]bool{}
	for _, r := range s.Tasks().Approvals().List() {
		open[r.ID] = true
	}
	s.acts.Retain(func(id string) bool { return open[id] })
}

// Buttons are the buttons of t's message: Approve and Deny, each
// posting its own token to this node's board. None without a board (a
// button must reach the node that holds the request), or when the
// request is no longer open.
func (s *Service) Buttons(t notify.Transition) []notify.Action {
	p := t.Session.Permission
	base := s.BoardBase()
	if p == nil || base == "" || s.acts == nil || s.Tasks() == nil {
		return nil
	}
	open := false
	for _, r := range s.Tasks().Approvals().List() {
		open = open || r.ID == p.ID
	}
	if !open {
		return nil
	}
	url := strings.TrimSuffix(base, "/") + board.ActPath
	var out []notify.Action
	for _, b := range []struct {
		label string
		d     acttoken.Decision
	}{{"Approve", acttoken.Allow}, {"Deny", acttoken.Deny}} {
		tok, err := s.acts.Mint(p.ID, b.d)
		if err != nil {
			s.Log.Warn("notify: no action buttons", "request", p.ID, "err", err)
			return nil
		}
		body, _ := json.Marshal(board.ActBody{Request: p.ID, Decision: string(b.d)})
		out = append(out, notify.Action{Label: b.label, URL: url, Method: "POST",
			Headers: map[string]string{board.ActTokenHeader: tok, "Content-Type": "application/json"}, Body: string(body)})
	}
	return out
}

// actDecider is the board's POST /act.
type actDecider struct{ s *Service }

// Decider is the board's POST /act.
func (s *Service) Decider() board.Decider { return actDecider{s} }

// Decide spends the token on that request and decision, then answers the
// request on this node.
func (a actDecider) Decide(_ context.Context, token, request string, d acttoken.Decision) (string, error) {
	s := a.s
	if s.acts == nil || s.Tasks() == nil {
		return "", fmt.Errorf("%w: this node holds no permission requests", board.ErrNotWaiting)
	}
	if err := s.acts.Use(token, request, d); err != nil {
		return "", err
	}
	label := "Approve"
	if d != acttoken.Allow {
		label = "Deny"
	}
	r, err := s.Tasks().Approvals().Answer(request, d == acttoken.Allow, ActionBy+"@"+s.Node,
		"the "+label+" button of a notification")
	switch {
	case errors.Is(err, tasks.ErrAnswered):
		return "", fmt.Errorf("%w: %w", board.ErrAnswered, err)
	case errors.Is(err, tasks.ErrExpired), errors.Is(err, tasks.ErrNoRequest):
		return "", fmt.Errorf("%w: %w", board.ErrNotWaiting, err)
	case err != nil:
		return "", err
	}
	verb := "denied"
	if d == acttoken.Allow {
		verb = "approved"
	}
	return fmt.Sprintf("%s %s (%s on %s)", verb, r.ID, r.Tool, r.Node), nil
}
