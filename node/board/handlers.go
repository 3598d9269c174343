package board

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/text"
)

//go:embed assets templates
var files embed.FS

// pages are the board's templates, parsed on first use: every harn command
// links this package, and only a node serving the board needs them.
var pages = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").Funcs(template.FuncMap{
		"underscore": func(s string) string { return strings.ReplaceAll(s, "_", " ") },
		"dash":       orDash,
	}).ParseFS(files, "templates/*.html"))
})

// readTimeout bounds one read of the source, and actionTimeout one action.
const (
	readTimeout   = 10 * time.Second
	actionTimeout = 15 * time.Second
)

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(files, "assets")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", s.boardPage)
	mux.HandleFunc("GET /fragment", s.boardFragment)
	mux.HandleFunc("GET /events", s.events)
	mux.HandleFunc("GET /s/{id}", s.detailPage)
	mux.HandleFunc("GET /s/{id}/fragment", s.detailFragment)
	mux.HandleFunc("POST /action", s.action)
	mux.HandleFunc("GET /h/{id}", s.hostedPageH)
	mux.HandleFunc("GET /h/{id}/screen", s.hostedScreenH)
	mux.HandleFunc("POST /hosted", s.hostedAction)
	mux.HandleFunc("GET /run", s.runPage)
	mux.HandleFunc("POST /run", s.runAction)
	if s.cfg.Metrics != nil {
		mux.Handle("GET "+metricsPath, s.cfg.Metrics)
	}
	for pattern, h := range s.cfg.Routes {
		mux.Handle(pattern, h)
	}
	return s.guard(mux)
}

// page is the data of every full page.
type page struct {
	Title   string
	CSRF    string
	Live    string // the fragment URL the script refetches on change
	Filter  Filter
	Options options
	Board   boardView
	Detail  detail
	Result  result
	Form    ActionRequest
	Action  string
	Status  int
}

// render executes a template into a buffer, then writes it: a template
// error never leaves half a page.
func (s *Server) render(w http.ResponseWriter, status int, name string, data any) {
	var buf bytes.Buffer
	if err := pages().ExecuteTemplate(&buf, name, data); err != nil {
		s.cfg.Logger.Error("board render", "template", name, "err", err)
		http.Error(w, "board: render failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func (s *Server) roster(r *http.Request) ([]Row, error) {
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	rows, err := s.cfg.Source.Roster(ctx)
	// A copy: the source may hand out a slice it keeps.
	out := make([]Row, len(rows))
	for i, r := range rows {
		out[i] = clean(r)
	}
	return out, err
}

func (s *Server) boardData(r *http.Request) (page, int) {
	f := filterOf(r.URL.Query())
	rows, err := s.roster(r)
	p := page{Title: "harn board", CSRF: s.csrf, Filter: f, Options: optionsOf(rows, f),
		Board: s.buildBoard(rows, f), Live: "/fragment"}
	if q := f.Query(); q != "" {
		p.Live += "?" + q
	}
	if err != nil {
		p.Board.Err = "roster unavailable: " + text.OneLine(err.Error())
		return p, http.StatusServiceUnavailable
	}
	return p, http.StatusOK
}

func (s *Server) boardPage(w http.ResponseWriter, r *http.Request) {
	p, status := s.boardData(r)
	s.render(w, status, "board.html", p)
}

func (s *Server) boardFragment(w http.ResponseWriter, r *http.Request) {
	p, status := s.boardData(r)
	s.render(w, status, "board-fragment", p)
}

func (s *Server) detailData(r *http.Request) (page, int) {
	id := text.OneLine(r.PathValue("id"))
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	row, err := s.cfg.Source.Session(ctx, id)
	p := page{Title: "session " + short(id), CSRF: s.csrf, Live: "/s/" + url.PathEscape(id) + "/fragment"}
	if err != nil {
		p.Result = result{Message: text.OneLine(err.Error())}
		if errors.Is(err, ErrNotFound) {
			p.Result.Message = "no session " + id + " in the roster or the registry"
			return p, http.StatusNotFound
		}
		return p, http.StatusBadGateway
	}
	row = clean(row)
	var evs []presence.Event
	evs, err = s.cfg.Source.Trace(ctx, row.SessionId)
	p.Title = "session " + orDash(row.Name) + " " + short(row.SessionId)
	p.Live = "/s/" + url.PathEscape(row.SessionId) + "/fragment"
	p.Detail = s.buildDetail(row, evs, err)
	return p, http.StatusOK
}

func (s *Server) detailPage(w http.ResponseWriter, r *http.Request) {
	p, status := s.detailData(r)
	if status != http.StatusOK {
		s.render(w, status, "error.html", p)
		return
	}
	s.render(w, status, "detail.html", p)
}

func (s *Server) detailFragment(w http.ResponseWriter, r *http.Request) {
	p, status := s.detailData(r)
	if status != http.StatusOK {
		s.render(w, status, "error-fragment", p)
		return
	}
	s.render(w, status, "detail-fragment", p)
}

// result is an action's outcome as the page shows it.
type result struct {
	OK      bool   `json:"ok"`
	Message string `json:"message"`
}

// actionKinds are the actions, with what each needs and its label.
var actionKinds = map[string]struct {
	label                 string
	needRequest, needTask bool
	needText              bool
	call                  func(Actions, context.Context, ActionRequest) (string, error)
}{
	"approve": {label: "Approve", needRequest: true, call: Actions.Approve},
	"deny":    {label: "Deny", needRequest: true, call: Actions.Deny},
	"approve_session": {label: "Approve for this session", needRequest: true, call: func(a Actions, ctx context.Context, r ActionRequest) (string, error) {
		r.SessionWide = true
		return a.Approve(ctx, r)
	}},
	"steer":     {label: "Steer", needTask: true, needText: true, call: Actions.Steer},
	"follow_up": {label: "Follow-up", needText: true, call: Actions.FollowUp},
	"cancel":    {label: "Cancel", needTask: true, call: Actions.Cancel},
}

func wantsJSON(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/json")
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request, status int, res result, p page) {
	if wantsJSON(r) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(res)
		return
	}
	p.Title, p.Result, p.Status = "action", res, status
	s.render(w, status, "result.html", p)
}

// action is POST /action: the CSRF token (the guard checked the origin),
// then a confirmation page (when
// the form is not confirmed yet, for browsers without the script), then
// the call.
func (s *Server) action(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.answer(w, r, http.StatusRequestEntityTooLarge, result{Message: "refused: the form is over " + strconv.FormatInt(tooBig.Limit, 10) + " bytes"}, page{})
			return
		}
		s.answer(w, r, http.StatusBadRequest, result{Message: "bad form: " + text.OneLine(err.Error())}, page{})
		return
	}
	// The body is read (the server's read timeout bounded it); the
	// action may run past that timeout.
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	if !s.csrfOK(r) {
		s.answer(w, r, http.StatusForbidden, result{Message: "refused: the request did not come from this board's page; reload the page and try again"}, page{})
		return
	}
	g := func(k string) string { return strings.TrimSpace(text.Sanitize(r.PostFormValue(k))) }
	kind := g("kind")
	a := ActionRequest{SessionID: g("session"), TaskID: g("task"), RequestID: g("request"),
		Kind: g("request_kind"), Text: g("text"), By: "board"}
	k, ok := actionKinds[kind]
	switch {
	case s.cfg.Actions == nil:
		s.answer(w, r, http.StatusNotImplemented, result{Message: "this board has no actions"}, page{})
		return
	case !ok:
		s.answer(w, r, http.StatusBadRequest, result{Message: "unknown action " + text.Clip(kind, 40) + "; use approve, approve_session, deny, steer, follow_up or cancel"}, page{})
		return
	case a.SessionID == "":
		s.answer(w, r, http.StatusBadRequest, result{Message: "no session given"}, page{})
		return
	case k.needRequest && a.RequestID == "":
		s.answer(w, r, http.StatusBadRequest, result{Message: "no request given"}, page{})
		return
	case k.needTask && a.TaskID == "":
		s.answer(w, r, http.StatusBadRequest, result{Message: "no task given"}, page{})
		return
	}
	p := page{CSRF: s.csrf, Form: a, Action: kind}
	if r.PostFormValue("confirmed") != "1" && !wantsJSON(r) {
		p.Title = k.label
		s.render(w, http.StatusOK, "confirm.html", p)
		return
	}
	if k.needText && a.Text == "" {
		s.answer(w, r, http.StatusBadRequest, result{Message: k.label + " needs a text"}, p)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), actionTimeout)
	defer cancel()
	msg, err := k.call(s.cfg.Actions, ctx, a)
	if err != nil {
		s.cfg.Logger.Info("board action refused", "action", kind, "session", a.SessionID, "err", err)
		status := http.StatusBadGateway
		if errors.Is(err, ErrUnsupported) {
			status = http.StatusNotImplemented
		}
		s.answer(w, r, status, result{Message: k.label + " failed: " + text.OneLine(err.Error())}, p)
		return
	}
	if msg = text.OneLine(msg); msg == "" {
		msg = k.label + " done"
	}
	s.answer(w, r, http.StatusOK, result{OK: true, Message: msg}, p)
}
