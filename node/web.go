package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/board"
	"github.com/harn-dev/harn/node/gossip"
	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/util/privfile"
	"github.com/harn-dev/harn/util/text"
)

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

// WebConfig bounds the board's listener (board.Limits; zero fields take
// board.DefaultLimits) and sets its scrape-only token.
type WebConfig struct {
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
func (n *Node) webToken() (string, error) {
	for _, t := range []string{n.cfg.HTTPToken, n.cfg.Web.MetricsToken} {
		if t != "" && len(t) < MinWebToken {
			return "", fmt.Errorf("%w: %w", ErrConfig, ErrWebTokenShort)
		}
	}
	if n.cfg.HTTPToken != "" {
		return n.cfg.HTTPToken, nil
	}
	p := WebTokenPath(n.cfg.DataDir)
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

// openWeb opens the board, with /metrics on its listener, when an address
// is set. A taken port is a *ListenError naming
// --http-port.
func (n *Node) openWeb() error {
	if n.tasks != nil {
		n.tasks.Approvals().OnChange(n.notes.ApprovalsChanged)
	}
	if n.cfg.HTTPAddr == "" {
		os.Remove(WebURLPath(n.cfg.DataDir)) // a killed node's
		return nil
	}
	tok, err := n.webToken()
	if err != nil {
		return err
	}
	b, err := board.New(board.Config{Addr: n.cfg.HTTPAddr, Token: tok, Source: webSource{n}, Actions: webActions{n, n.hosts.Board()}, Decider: n.notes.Decider(),
		Less: urgencyLess, Logger: n.log.With("room", "board"),
		Metrics: n.metrics.Handler(), MetricsToken: n.cfg.Web.MetricsToken, Limits: n.cfg.Web.Limits})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := b.Open(); err != nil {
		var le *board.ListenError
		if errors.As(err, &le) {
			return &ListenError{Listener: "http", Addr: n.cfg.HTTPAddr, Flag: "--http-port", Err: le.Err}
		}
		return err
	}
	n.board = b
	if err := privfile.Write(WebURLPath(n.cfg.DataDir), b.URL()+"\n"); err != nil {
		n.log.Warn("board url file", "err", err)
	}
	if n.cl != nil {
		n.start(n.watchRegistry)
	}
	return nil
}

// BoardURL is the board's URL with ?token=, or "" without a board.
func (n *Node) BoardURL() string {
	if n.board == nil {
		return ""
	}
	return n.board.URL()
}

// BoardBaseURL is the board's URL without the token, as others reach it
// (--http-public-url, else the listen address), or "" without a board.
// Notifications' links and buttons are built on it.
func (n *Node) BoardBaseURL() string {
	if n.board == nil {
		return ""
	}
	if n.cfg.Web.PublicURL != "" {
		return n.cfg.Web.PublicURL
	}
	return n.board.BaseURL()
}

// Changes subscribes to the node's changes (see node/changes).
func (n *Node) Changes() (<-chan struct{}, func()) { return n.changes.Subscribe() }

// closeWeb stops the board (its streams end) and removes the URL file.
func (n *Node) closeWeb() {
	n.changes.Close()
	if n.board != nil {
		if err := n.board.Close(); err != nil {
			n.log.Warn("board close", "err", err)
		}
		os.Remove(WebURLPath(n.cfg.DataDir))
	}
}

// watchRegistry notifies a change whenever the local registry replica
// applies an entry. It ends when the node stops.
func (n *Node) watchRegistry() {
	ctx, cancel := stopContext(context.Background(), n.stop)
	defer cancel()
	for ctx.Err() == nil {
		idx := n.cl.Registry().Staleness().AppliedIndex
		if err := n.cl.Registry().WaitForApplied(ctx, idx+1); err != nil {
			if ctx.Err() != nil {
				return
			}
			// The store is closing or failed: do not spin.
			t := n.cfg.Clock.NewTimer(time.Second)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
			}
			continue
		}
		n.changes.Notify()
	}
}

// gossipNotifier is the mesh handler with a change notice after a peer's
// presence changed (a newer delta, a blob that changed its digest) and
// after every membership change.
type gossipNotifier struct {
	*gossip.Handler
	notify func()
}

func (n *Node) gossipNotifier(h *gossip.Handler) mesh.Handler {
	return gossipNotifier{Handler: h, notify: n.changes.Notify}
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
