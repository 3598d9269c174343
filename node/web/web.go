// Package web is the node's web room: the board (node/board) on
// --http-port behind its token (the configured one, else one made in the
// data dir, 0600), /metrics on the same listener, the board's Source (the
// mesh-wide roster with the waiting calls of this node and its peers) and
// Actions (the task service's calls, as board@<node>), the board's URL
// files, and the change notices that repaint it: the registry's applies
// (a goroutine it owns) and gossip (GossipNotifier). It reads the rest of
// the node through the interfaces and funcs of Deps, declared here.
package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/apigrpc"
	"github.com/harn-dev/harn/node/board"
	"github.com/harn-dev/harn/node/changes"
	"github.com/harn-dev/harn/node/cluster"
	"github.com/harn-dev/harn/node/gossip"
	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/clock"
	"github.com/harn-dev/harn/util/privfile"
	"github.com/harn-dev/harn/util/text"
)

// Mesh is what the room needs of the mesh.
type Mesh interface {
	ClientOf(node string) (apigrpc.ClusterClient, error)
	Registry() cluster.Replica
}

// Tasks are the task service's calls the board's actions make.
type Tasks interface {
	Answer(ctx context.Context, req *api.AnswerRequest) (*api.AnswerResponse, error)
	Task(ctx context.Context, req *api.TaskRequest) (*api.TaskResponse, error)
}

// Deps wires the room to the rest of the node.
type Deps struct {
	Node    string
	DataDir string
	// Addr is --http-port's address ("": no board); Token the board's
	// configured token ("": the data dir's).
	Addr, Token string
	Log         *slog.Logger
	Clock       clock.Clock
	Changes     *changes.Broadcaster
	Metrics     http.Handler
	// Rows is the mesh-wide roster as the board shows it; Row one
	// session's, by handle; Trace its events.
	Rows  func(ctx context.Context) ([]board.Row, error)
	Row   func(ctx context.Context, handle string) (board.Row, error)
	Trace func(ctx context.Context, handle string) ([]presence.Event, error)
	// Waiting are this node's calls that wait for an operator.
	Waiting func() []tasks.Request
	// Mesh is the mesh, nil without it; Members its members, each with
	// whether it is reachable.
	Mesh             func() Mesh
	Members          func() map[string]bool
	OwnerReadTimeout time.Duration
	Tasks            Tasks
	Hoster           board.Hoster
	Decider          board.Decider
}

// Web is the web room.
type Web struct {
	Deps
	cfg       Config
	board     *board.Server // nil without --http-port
	pending   pendingCache  // peers' open permission requests
	stop      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// Open opens the board, with /metrics on its listener, when an address
// is set. A taken port is a *layout.ListenError naming --http-port.
func Open(c Config, d Deps) (*Web, error) {
	w := &Web{Deps: d, cfg: c, stop: make(chan struct{})}
	if err := w.open(); err != nil {
		return nil, err
	}
	return w, nil
}

// The web part of the node: the board (node/board) on Config.HTTPAddr,
// /metrics (node/metrics) on the same listener and behind the same access
// rules, and the change broadcaster (node/changes) that repaints the
// board. Changes come from three places: heartbeat writes (the projector's
// OnWrite), gossip that changed a peer's presence or a member's state
// (gossipNotifier), and registry applies (watchRegistry).

// Errors of the web part.
var (
	// ErrHTTPAddr: --http-port is neither a port nor host:port.
	ErrHTTPAddr = layout.ErrHTTPAddr
	// ErrTokenFile: the board's token file is not private or cannot be
	// read.
	ErrTokenFile = errors.New("node: the board's token file is unsafe or unreadable")
)

// MinWebToken is the shortest token the board accepts: a local user may
// guess at loopback speed.
const MinWebToken = 16

// ErrWebTokenShort: a configured board or scrape token is too short to
// stand guesses.
var ErrWebTokenShort = fmt.Errorf("node: the board's token is shorter than %d characters; make one with `openssl rand -hex 24`, or drop it and let the node make one", MinWebToken)

// Config bounds the board's listener (board.Limits; zero fields take
// board.DefaultLimits) and sets its scrape-only token.
type Config struct {
	// MetricsToken, when set, opens GET /metrics (as a bearer header) and
	// nothing else.
	MetricsToken string
	Limits       board.Limits
	// PublicURL is the board's address as others reach it (a proxy's,
	// say; ParsePublicURL): notifications link to it and their buttons
	// post to it. Empty: the listen address (board.BaseURL).
	PublicURL string
}

// ErrPublicURL: --http-public-url is not an http(s) URL of a host, with
// no user, query or fragment.
var ErrPublicURL = errors.New("node: --http-public-url must be an http:// or https:// URL of a host, with no user, query or fragment, e.g. https://harn.example/")

// ParsePublicURL checks a board's public URL and returns it ending in "/".
func ParsePublicURL(s string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil ||
		u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "" || strings.ContainsAny(s, " \t\r\n") {
		return "", fmt.Errorf("%w (got %q)", ErrPublicURL, text.Clip(text.OneLine(s), 80))
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/"
	return u.String(), nil
}

// webToken is the token the board needs, on loopback too: the configured
// one, else the one stored in the data dir (made on first use, 0600).
func (w *Web) webToken() (string, error) {
	for _, t := range []string{w.Token, w.cfg.MetricsToken} {
		if t != "" && len(t) < MinWebToken {
			return "", fmt.Errorf("%w: %w", layout.ErrConfig, ErrWebTokenShort)
		}
	}
	if w.Token != "" {
		return w.Token, nil
	}
	p := layout.WebTokenPath(w.DataDir)
	if fi, err := os.Lstat(p); err == nil {
		if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 {
			return "", fmt.Errorf("%w: %s has mode %v; make it 0600 (chmod 600) or remove it", ErrTokenFile, p, fi.Mode())
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return "", fmt.Errorf("%w: %w", ErrTokenFile, err)
		}
		if t := strings.TrimSpace(string(b)); len(t) >= MinWebToken {
			return t, nil
		}
		return "", fmt.Errorf("%w: %s holds no token of at least %d characters; remove it to make a new one", ErrTokenFile, p, MinWebToken)
	}
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	tok := hex.EncodeToString(b)
	if err := privfile.Write(p, tok+"\n"); err != nil {
		return "", fmt.Errorf("%w: %w", ErrTokenFile, err)
	}
	return tok, nil
}

// open opens the board when an address is set.
func (w *Web) open() error {
	if w.Addr == "" {
		os.Remove(layout.WebURLPath(w.DataDir)) // a killed node's
		return nil
	}
	tok, err := w.webToken()
	if err != nil {
		return err
	}
	b, err := board.New(board.Config{Addr: w.Addr, Token: tok, Source: webSource{w}, Actions: webActions{w, w.Hoster}, Decider: w.Decider,
		Less: UrgencyLess, Logger: w.Log.With("room", "board"),
		Metrics: w.Metrics, MetricsToken: w.cfg.MetricsToken, Limits: w.cfg.Limits})
	if err != nil {
		return fmt.Errorf("%w: %w", layout.ErrConfig, err)
	}
	if err := b.Open(); err != nil {
		var le *board.ListenError
		if errors.As(err, &le) {
			return &layout.ListenError{Listener: "http", Addr: w.Addr, Flag: "--http-port", Err: le.Err}
		}
		return err
	}
	w.board = b
	if err := privfile.Write(layout.WebURLPath(w.DataDir), b.URL()+"\n"); err != nil {
		w.Log.Warn("board url file", "err", err)
	}
	if m := w.Mesh(); m != nil {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			w.watchRegistry(m)
		}()
	}
	return nil
}

// URL is the board's URL with ?token=, or "" without a board.
func (w *Web) URL() string {
	if w == nil || w.board == nil {
		return ""
	}
	return w.board.URL()
}

// BaseURL is the board's URL without the token, as others reach it
// (--http-public-url, else the listen address), or "" without a board.
// Notifications' links and buttons are built on it.
func (w *Web) BaseURL() string {
	if w == nil || w.board == nil {
		return ""
	}
	if w.cfg.PublicURL != "" {
		return w.cfg.PublicURL
	}
	return w.board.BaseURL()
}

// Close stops the registry watch and the board (its streams end; close
// the change broadcaster first) and removes the URL file. It is safe on a
// nil Web and twice.
func (w *Web) Close() {
	if w == nil {
		return
	}
	w.closeOnce.Do(func() { close(w.stop) })
	w.wg.Wait()
	if w.board != nil {
		if err := w.board.Close(); err != nil {
			w.Log.Warn("board close", "err", err)
		}
		os.Remove(layout.WebURLPath(w.DataDir))
	}
}

// watchRegistry notifies a change whenever the local registry replica
// applies an entry. It ends when the node stops.
func (w *Web) watchRegistry(m Mesh) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // ends with ctx
		select {
		case <-w.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for ctx.Err() == nil {
		idx := m.Registry().Staleness().AppliedIndex
		if err := m.Registry().WaitForApplied(ctx, idx+1); err != nil {
			if ctx.Err() != nil {
				return
			}
			// The store is closing or failed: do not spin.
			t := w.Clock.NewTimer(time.Second)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
			}
			continue
		}
		w.Changes.Notify()
	}
}

// gossipNotifier is the mesh handler with a change notice after a peer's
// presence changed (a newer delta, a blob that changed its digest) and
// after every membership change.
type gossipNotifier struct {
	*gossip.Handler
	notify func()
}

// GossipNotifier is h, telling notify of each change of a peer's
// presence and of the members.
func GossipNotifier(h *gossip.Handler, notify func()) mesh.Handler {
	return gossipNotifier{Handler: h, notify: notify}
}

func (g gossipNotifier) ApplyDelta(from, key string, version uint64, delta []byte) {
	if key == gossip.DigestKey || from == g.Self {
		g.Handler.ApplyDelta(from, key, version, delta)
		return
	}
	before := g.Table.Version(from, key)
	g.Handler.ApplyDelta(from, key, version, delta)
	if g.Table.Version(from, key) != before {
		g.notify()
	}
}

func (g gossipNotifier) MergeRemoteState(from string, data []byte) {
	before := g.Table.Digest(from)
	g.Handler.MergeRemoteState(from, data)
	if g.Table.Digest(from) != before {
		g.notify()
	}
}

func (g gossipNotifier) MemberEvent(ev mesh.MemberEvent) {
	g.Handler.MemberEvent(ev)
	g.notify()
}

// ListenAddr is the board's listen address, "" without a board.
func (w *Web) ListenAddr() string {
	if w == nil || w.board == nil {
		return ""
	}
	return w.board.Addr()
}

// Source is the board's Source.
func (w *Web) Source() board.Source { return webSource{w} }

// Actions is the board's Actions.
func (w *Web) Actions() board.Actions { return webActions{w, w.Hoster} }
