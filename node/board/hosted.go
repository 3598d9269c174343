package board

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/harn-dev/harn/util/text"
)

// Hosted sessions on the board: a page per hosted session with its
// terminal's screen, live (the page's script refetches /h/{id}/screen),
// a box that types a steer or holds a follow-up, and the interrupt and
// stop buttons; and a form that starts an agent in a terminal on any node
// this board's node may start on. The node implements Hoster beside
// Actions; a board whose Actions is no Hoster shows neither. Every action
// is a POST with the page's CSRF token, behind the board's token, and
// every text from the terminal is escaped (html/template) after its
// control characters are stripped.

// RunRequest is a start asked from the board.
type RunRequest struct {
	Agent, Node, Dir, Worktree, Base, Prompt string
	By                                       string
}

// RunTargets are the board's start form's choices.
type RunTargets struct {
	Nodes  []string // this node first
	Agents []string // built-ins and this node's launchers
}

// Hoster is what the board does with hosted sessions (found on Actions by
// type assertion).
type Hoster interface {
	// Screen is a hosted session's screen as lines of text.
	Screen(ctx context.Context, session string) ([]string, error)
	// Act steers (op steer), holds a follow-up (follow_up), interrupts
	// or stops a hosted session.
	Act(ctx context.Context, op string, a ActionRequest) (string, error)
	// Run starts an agent in a terminal; it returns the session's id.
	Run(ctx context.Context, r RunRequest) (string, error)
	Targets(ctx context.Context) RunTargets
}

func (s *Server) hoster() Hoster {
	h, _ := s.cfg.Actions.(Hoster)
	return h
}

// hostedKinds are the hosted page's actions.
var hostedKinds = map[string]struct {
	label    string
	needText bool
}{
	"steer":     {"Steer (type now)", true},
	"follow_up": {"Follow-up (at the turn's end)", true},
	"interrupt": {"Interrupt", false},
	"stop":      {"Stop", false},
}

// hostedPage is the data of the hosted page and its screen fragment.
type hostedPage struct {
	page
	ID, Short string
	Row       Row
	Found     bool
	Lines     []string
	Err       string
	Poll      string
}

func (s *Server) hostedData(r *http.Request) (hostedPage, int) {
	id := text.OneLine(r.PathValue("id"))
	p := hostedPage{page: page{Title: "terminal " + short(id), CSRF: s.csrf}, ID: id, Short: short(id),
		Poll: "/h/" + url.PathEscape(id) + "/screen"}
	h := s.hoster()
	if h == nil {
		p.Err = "this board hosts no terminals"
		return p, http.StatusNotImplemented
	}
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	p.Row = clean(Row{}) // the page reads an empty row when the roster has none
	if row, err := s.cfg.Source.Session(ctx, id); err == nil {
		p.Row, p.Found = clean(row), true
		p.ID, p.Short = p.Row.SessionId, short(p.Row.SessionId)
		p.Poll = "/h/" + url.PathEscape(p.ID) + "/screen"
	}
	lines, err := h.Screen(ctx, p.ID)
	if err != nil {
		p.Err = "no screen: " + text.OneLine(err.Error())
		return p, http.StatusOK
	}
	p.Lines = make([]string, len(lines))
	for i, l := range lines {
		p.Lines[i] = text.Sanitize(l)
	}
	return p, http.StatusOK
}

func (s *Server) hostedPageH(w http.ResponseWriter, r *http.Request) {
	p, status := s.hostedData(r)
	s.render(w, status, "hosted.html", p)
}

func (s *Server) hostedScreenH(w http.ResponseWriter, r *http.Request) {
	p, status := s.hostedData(r)
	s.render(w, status, "hosted-screen", p)
}

// hostedAction is POST /hosted: steer, follow_up, interrupt or stop.
func (s *Server) hostedAction(w http.ResponseWriter, r *http.Request) {
	kind, a, ok := s.postForm(w, r)
	if !ok {
		return
	}
	k, known := hostedKinds[kind]
	h := s.hoster()
	switch {
	case h == nil:
		s.answer(w, r, http.StatusNotImplemented, result{Message: "this board hosts no terminals"}, page{})
		return
	case !known:
		s.answer(w, r, http.StatusBadRequest, result{Message: "unknown action " + text.Clip(kind, 40) + "; use steer, follow_up, interrupt or stop"}, page{})
		return
	case a.SessionID == "":
		s.answer(w, r, http.StatusBadRequest, result{Message: "no session given"}, page{})
		return
	case k.needText && a.Text == "":
		s.answer(w, r, http.StatusBadRequest, result{Message: k.label + " needs a text"}, page{})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), actionTimeout)
	defer cancel()
	msg, err := h.Act(ctx, kind, a)
	if err != nil {
		s.cfg.Logger.Info("board hosted action refused", "action", kind, "session", a.SessionID, "err", err)
		s.answer(w, r, http.StatusBadGateway, result{Message: k.label + " failed: " + text.OneLine(err.Error())}, page{CSRF: s.csrf})
		return
	}
	s.answer(w, r, http.StatusOK, result{OK: true, Message: text.OneLine(msg)}, page{CSRF: s.csrf})
}

// postForm reads an action form: its size, then the CSRF token (the
// guard checked the origin). It answers the refusals itself.
func (s *Server) postForm(w http.ResponseWriter, r *http.Request) (string, ActionRequest, bool) {
	if err := r.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.answer(w, r, http.StatusRequestEntityTooLarge, result{Message: "refused: the form is too large"}, page{})
			return "", ActionRequest{}, false
		}
		s.answer(w, r, http.StatusBadRequest, result{Message: "bad form: " + text.OneLine(err.Error())}, page{})
		return "", ActionRequest{}, false
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	if !s.csrfOK(r) {
		s.answer(w, r, http.StatusForbidden, result{Message: "refused: the request did not come from this board's page; reload the page and try again"}, page{})
		return "", ActionRequest{}, false
	}
	g := func(k string) string { return strings.TrimSpace(text.Sanitize(r.PostFormValue(k))) }
	return g("kind"), ActionRequest{SessionID: g("session"), Text: g("text"), By: "board"}, true
}

// runPage is GET /run: the start form.
func (s *Server) runPage(w http.ResponseWriter, r *http.Request) {
	h := s.hoster()
	if h == nil {
		s.answer(w, r, http.StatusNotImplemented, result{Message: "this board hosts no terminals"}, page{})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	t := h.Targets(ctx)
	for i := range t.Nodes {
		t.Nodes[i] = text.Sanitize(t.Nodes[i])
	}
	for i := range t.Agents {
		t.Agents[i] = text.Sanitize(t.Agents[i])
	}
	s.render(w, http.StatusOK, "run.html", struct {
		page
		Targets RunTargets
	}{page{Title: "start an agent", CSRF: s.csrf}, t})
}

// runAction is POST /run: start an agent, then go to its page.
func (s *Server) runAction(w http.ResponseWriter, r *http.Request) {
	_, _, ok := s.postForm(w, r)
	if !ok {
		return
	}
	h := s.hoster()
	if h == nil {
		s.answer(w, r, http.StatusNotImplemented, result{Message: "this board hosts no terminals"}, page{})
		return
	}
	g := func(k string) string { return strings.TrimSpace(text.Sanitize(r.PostFormValue(k))) }
	req := RunRequest{Agent: g("agent"), Node: g("node"), Dir: g("dir"), Worktree: g("worktree"), Base: g("base"),
		Prompt: g("prompt"), By: "board"}
	if req.Agent == "" || req.Dir == "" {
		s.answer(w, r, http.StatusBadRequest, result{Message: "a start needs an agent and a directory"}, page{})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), actionTimeout)
	defer cancel()
	id, err := h.Run(ctx, req)
	if err != nil {
		s.cfg.Logger.Info("board start refused", "agent", req.Agent, "node", req.Node, "err", err)
		s.answer(w, r, http.StatusBadGateway, result{Message: "start failed: " + text.OneLine(err.Error())}, page{CSRF: s.csrf})
		return
	}
	if wantsJSON(r) {
		s.answer(w, r, http.StatusOK, result{OK: true, Message: text.OneLine(id)}, page{})
		return
	}
	http.Redirect(w, r, "/h/"+url.PathEscape(id), http.StatusSeeOther)
}
