// Package board is the node's web board: the live board of every session in
// the mesh, the session detail page, the server-sent event stream that
// repaints them, and the action buttons (approve, deny, steer, follow-up,
// cancel). It reads through the Source and acts through the Actions the node
// implements; it holds no session state of its own. Pages are rendered on
// the server with html/template; the few lines of JS and CSS are embedded.
package board

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"syscall"
	"time"

	"github.com/harn-dev/harn/node/board/boardlimits"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/clock"
)

// DefaultAddr is where the board listens unless told otherwise.
const DefaultAddr = "127.0.0.1:7713"

// Source is what the board reads; the node implements it over its roster
// and registry.
type Source interface {
	// Roster returns every session the mesh knows, live and ended; the
	// board shows the live ones.
	Roster(ctx context.Context) ([]Row, error)
	// Session returns one session by id or unique prefix, live or ended,
	// local or remote. An unknown handle returns an error that wraps
	// ErrNotFound.
	Session(ctx context.Context, handle string) (Row, error)
	// Trace returns a session's events in any order (the page sorts them
	// newest first).
	Trace(ctx context.Context, handle string) ([]presence.Event, error)
	// Changes subscribes to changes: the channel fires (it may coalesce)
	// whenever a heartbeat or the registry changes. The func ends the
	// subscription; a closed channel ends it too.
	Changes() (<-chan struct{}, func())
}

// ActionRequest is one action asked from the board.
type ActionRequest struct {
	SessionID string
	TaskID    string // the harn task (steer, cancel, and task confirmations)
	RequestID string // the permission request or confirmation call (approve, deny)
	Kind      string // the request's kind: "permission" or "confirmation"
	Text      string // steer and follow-up text; deny and cancel reason
	By        string // who asked: "board"
	// SessionWide: approve, and allow the tool for the rest of the
	// session (agents that support it).
	SessionWide bool
}

// Actions is what the board does; the node implements it with the same API
// as the CLI, so the mesh's authority rules apply unchanged. Each returns a
// short message for people, or an error.
type Actions interface {
	Approve(ctx context.Context, a ActionRequest) (string, error)
	Deny(ctx context.Context, a ActionRequest) (string, error)
	Steer(ctx context.Context, a ActionRequest) (string, error)
	FollowUp(ctx context.Context, a ActionRequest) (string, error)
	Cancel(ctx context.Context, a ActionRequest) (string, error)
}

// Config configures a board.
type Config struct {
	// Addr is host:port to listen on; empty means DefaultAddr.
	Addr string
	// Token is required of every request, on loopback too: a bearer
	// header, or the cookie set from ?token=. New refuses an empty one.
	Token string
	// MetricsToken, when set, is a scrape-only bearer token: it opens
	// GET /metrics and nothing else.
	MetricsToken string
	// Metrics, when set, is served at GET /metrics (behind Token or
	// MetricsToken).
	Metrics http.Handler
	Source  Source
	Actions Actions // nil: no action buttons
	// Decider takes the action tokens of notifications' buttons at POST
	// /act (nil: /act answers 404). An action token opens nothing else.
	Decider Decider
	// Less orders rows; nil means DefaultLess.
	Less func(a, b Row) bool
	// Clock reads the time (the pages' ages and stamps) and runs the event
	// streams' timers (the coalescing hold, the keep-alive ping); nil
	// means clock.Real.
	Clock clock.Clock
	// MinInterval is the least time between two pushes on one stream
	// (default 200ms: at most 5 a second).
	MinInterval time.Duration
	// Ping is the interval of keep-alive comments on a stream (default 15s).
	Ping   time.Duration
	Logger *slog.Logger
	// Routes are more handlers served behind the same access rules, by
	// ServeMux pattern.
	Routes map[string]http.Handler
	// Limits bound every request and stream; zero fields take the
	// defaults (DefaultLimits).
	Limits Limits
}

// Limits bound what one client can hold of the board: time per request,
// bytes per request, streams, connections (boardlimits, which the client
// links for `harn node`'s flag defaults without the board).
type Limits = boardlimits.Limits

// DefaultLimits are the limits of a board configured with none.
var DefaultLimits = boardlimits.Default

var (
	// ErrTokenRequired: no token. Every board needs one, on loopback
	// too: another local user must not read or act through it.
	ErrTokenRequired = errors.New("board: a token is required; set --http-token-file, or let the node make one in its data dir")
	// ErrBadAddr: the address is not host:port.
	ErrBadAddr = errors.New("board: bad listen address; use host:port, e.g. 127.0.0.1:7713")
	// ErrNoSource: Config.Source is nil.
	ErrNoSource = errors.New("board: no source")
	// ErrAddrInUse is matched (errors.Is) by a ListenError whose port is taken.
	ErrAddrInUse = errors.New("board: address in use")
	// ErrClosed: Open after Close.
	ErrClosed = errors.New("board: closed")
	// ErrOpen: Open twice.
	ErrOpen = errors.New("board: already open")
	// ErrNotFound is what a Source wraps for an unknown session.
	ErrNotFound = errors.New("board: no such session")
	// ErrUnsupported is what an Actions method may wrap when the action
	// is not available (the page shows it as the result).
	ErrUnsupported = errors.New("board: action not supported")
)

// ListenError says the board could not listen on Addr.
type ListenError struct {
	Addr string
	Err  error
}

func (e *ListenError) Error() string {
	if errors.Is(e.Err, syscall.EADDRINUSE) {
		return fmt.Sprintf("board: %s is in use; choose another port with --http-port", e.Addr)
	}
	return fmt.Sprintf("board: listen on %s: %v", e.Addr, e.Err)
}

func (e *ListenError) Unwrap() error { return e.Err }

// Is matches ErrAddrInUse when the cause is EADDRINUSE.
func (e *ListenError) Is(target error) bool {
	return target == ErrAddrInUse && errors.Is(e.Err, syscall.EADDRINUSE)
}

// Server is one board. New makes it; Open listens; Close stops it.
type Server struct {
	cfg        Config
	loopback   bool
	csrf       string
	cookieName string // the auth cookie's name, derived from the token (boards on one host do not share it)
	cookie     string // the auth cookie's value, derived from the token
	handler    http.Handler

	smu       sync.Mutex     // guards the stream counts
	streams   int            // open event streams
	perClient map[string]int // open event streams by remote address

	ctx    context.Context // cancelled by Close: ends streams and reads
	cancel context.CancelFunc
	wg     sync.WaitGroup // the serve goroutine and every handler (added under mu while open)

	mu     sync.Mutex
	srv    *http.Server
	addr   string   // the bound address once open
	conns  *tracker // admits connections once open
	opened bool
	closed bool
}

// New checks cfg and makes a board. It does no I/O.
func New(cfg Config) (*Server, error) {
	if cfg.Source == nil {
		return nil, ErrNoSource
	}
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %w", ErrBadAddr, cfg.Addr, err)
	}
	loop := isLoopbackHost(host)
	if cfg.Token == "" {
		return nil, ErrTokenRequired
	}
	if cfg.Less == nil {
		cfg.Less = DefaultLess
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.MinInterval <= 0 {
		cfg.MinInterval = 200 * time.Millisecond
	}
	if cfg.Ping <= 0 {
		cfg.Ping = 15 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.Limits = cfg.Limits.WithDefaults()
	s := &Server{cfg: cfg, loopback: loop, csrf: randomHex(), cookieName: cookieNameOf(cfg.Token),
		cookie: cookieValue(cfg.Token), perClient: map[string]int{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.handler = s.routes()
	return s, nil
}

func randomHex() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Handler is the board's HTTP handler, with access control; Open serves
// it. Tests and embedders may serve it themselves.
func (s *Server) Handler() http.Handler { return s.handler }

// Open listens on Addr and serves in the background. A taken port returns
// a *ListenError that matches ErrAddrInUse.
func (s *Server) Open() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return ErrClosed
	case s.opened:
		return ErrOpen
	}
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return &ListenError{Addr: s.cfg.Addr, Err: err}
	}
	s.opened = true
	s.addr = ln.Addr().String()
	lim := s.cfg.Limits
	s.conns = newTracker(lim, peerOf)
	ln = &fairListener{Listener: ln, t: s.conns}
	s.srv = &http.Server{
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
		Handler:           s.handler,
		ReadHeaderTimeout: lim.ReadHeaderTimeout,
		ReadTimeout:       lim.ReadTimeout,
		WriteTimeout:      lim.WriteTimeout,
		IdleTimeout:       lim.IdleTimeout,
		MaxHeaderBytes:    lim.MaxHeader,
		BaseContext:       func(net.Listener) context.Context { return s.ctx },
		ErrorLog:          slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelDebug),
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.cfg.Logger.Error("board serve", "err", err)
		}
	}()
	s.cfg.Logger.Info("board listening", "addr", s.addr)
	return nil
}

// Addr is the bound address once open, else the configured one.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.addr != "" {
		return s.addr
	}
	return s.cfg.Addr
}

// URL is the address to open in a browser, with ?token= (the page then
// keeps it in a cookie and drops it from the address). An unspecified host
// (0.0.0.0, ::) reads as loopback.
func (s *Server) URL() string {
	return s.BaseURL() + "?" + url.Values{"token": {s.cfg.Token}}.Encode()
}

// BaseURL is the board's address without the token: http://host:port/.
func (s *Server) BaseURL() string {
	host, port, _ := net.SplitHostPort(s.Addr())
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	u := url.URL{Scheme: "http", Host: net.JoinHostPort(host, port), Path: "/"}
	return u.String()
}

// Close ends every stream, stops the server and waits for all its
// goroutines. It is safe to call twice, and before or after a failed Open.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	srv := s.srv
	s.mu.Unlock()
	s.cancel()
	var err error
	if srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err = srv.Shutdown(ctx); err != nil {
			err = srv.Close()
		}
		cancel()
	}
	s.wg.Wait()
	return err
}
