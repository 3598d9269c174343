package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/alerts"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/notify"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/raftstore"
)

// The wiring of the notifications room (node/alerts): its config, the
// views of the node and the mesh it reads, and the local service's Notify
// and Wait calls.

// NotifyConfig configures notifications.
type NotifyConfig struct {
	// Desktop shows a desktop notification (notify-send or osascript,
	// whichever exists; nothing when neither does) when one of this
	// node's sessions needs input.
	Desktop bool
	// SilenceAfter is the silence rule's threshold for `silent`
	// notifications (0: 5 min, as `harn agents list`; negative: never).
	SilenceAfter time.Duration
	// AllowPrivate lets webhooks reach loopback, link-local, private,
	// unspecified and multicast addresses (`--allow-private`); without it
	// `notify add` refuses them and the sender will not connect to them.
	AllowPrivate bool
	// Engine tunes debounce, cooldown, queues and backoff (zero: the
	// engine's defaults).
	Engine notify.Config
	// Sender and DesktopNotifier replace the HTTP sender and the desktop
	// program (tests).
	Sender          notify.Sender
	DesktopNotifier notify.Desktop
}

// WaitPoll is how often a wait looks at the roster when nothing of this
// node changed (other nodes' sessions change by gossip).
const WaitPoll = 200 * time.Millisecond

// Notify errors.
var (
	// ErrUnknownWebhook: no webhook of the mesh has that ID.
	ErrUnknownWebhook = errors.New("node: no webhook has that id; see `harn notify list`")
	// ErrWaitEnded: the session ended without coming to the state.
	ErrWaitEnded = errors.New("node: the session ended")
)

// openAlerts builds the notifications room and records the node's
// sessions as already told. It runs before the spool drains, so that what
// happened while the node was down is told.
func (n *Node) openAlerts() {
	nc := n.cfg.Notify
	ac := alerts.Config{Clock: n.cfg.Clock, Logger: n.log, Engine: nc.Engine, Sender: nc.Sender,
		SilenceAfter: nc.SilenceAfter, Link: n.sessionLink, Permission: n.waitingPermission,
		Actions: n.actionButtons}
	if ac.Sender == nil {
		ac.Sender = notify.NewHTTPSender(0, nc.AllowPrivate)
	}
	if nc.Desktop {
		if nc.DesktopNotifier != nil {
			ac.Desktop = nc.DesktopNotifier
		} else if d := notify.NewExecDesktop(0); d.Available() {
			ac.Desktop = d
		} else {
			n.log.Debug("notify: neither notify-send nor osascript exists; no desktop notifications")
		}
	}
	n.desktopOn = ac.Desktop != nil
	n.alerts = alerts.New(ac, alertsSessions{n}, alertsMesh{n})
	n.alerts.Baseline(n.Sessions(false))
}

// sessionLink is a session's page on this node's board, without the
// token ("" without a board).
func (n *Node) sessionLink(session string) string {
	base := n.BoardBaseURL()
	if base == "" || session == "" {
		return ""
	}
	return strings.TrimSuffix(base, "/") + "/s/" + url.PathEscape(session)
}

// waitingPermission is the newest call of a session of this node that
// waits for an operator (a permission request or a task confirmation),
// with what it asks, as a message tells it.
func (n *Node) waitingPermission(session string) *notify.Permission {
	var out *notify.Permission
	for _, r := range n.waiting() {
		if r.Session == session {
			out = &notify.Permission{ID: r.ID, Kind: r.Kind, Tool: r.Tool, Summary: r.Summary, Detail: r.Detail,
				Command: r.Command, CommandCut: r.CommandCut, Cwd: r.Cwd, Path: r.Path, Diff: r.Diff, DiffCut: r.DiffCut,
				Opened: r.Opened}
		}
	}
	return out
}

// alertsSessions is the room's view of the node's own sessions.
type alertsSessions struct{ n *Node }

func (s alertsSessions) Own() []presence.State { return s.n.Sessions(false) }

// alertsMesh is the room's view of the mesh; without one it leads nothing
// and holds no webhooks.
type alertsMesh struct{ n *Node }

// Leading reports whether this node announces the unreachable nodes: it
// leads the registry, or the registry has no leader and this node is the
// first by name of the servers it can reach. A 2-server mesh with one down
// has no leader; the other server announces it. All the servers that see
// the same members pick the same one, so a node is announced at most once.
func (m alertsMesh) Leading() bool {
	if m.n.cl == nil {
		return false
	}
	if m.n.cl.Registry().IsLeader() {
		return true
	}
	if id, _ := m.n.cl.Registry().Leader(); id != "" {
		return false
	}
	return m.n.cfg.Cluster.Voter() && firstServer(m.n.cfg.Name, m.n.reachability())
}

// firstServer reports whether self is the first by name of the reachable
// servers in members (self counts as reachable).
func firstServer(self string, members map[string]mesh.Member) bool {
	for name, mb := range members {
		if name != self && name < self && mb.Meta.Role == mesh.RoleServer && reachable(mb, true) {
			return false
		}
	}
	return true
}

func (m alertsMesh) Leader() string {
	if m.n.cl == nil {
		return ""
	}
	id, _ := m.n.cl.Registry().Leader()
	return id
}

// Webhooks are the registry's webhooks. Until the local replica holds
// any (right after a restart, while the registry catches up) they are the
// last set this node applied, kept in its ledger, so that a restarted
// node tells what happens in its first seconds.
func (m alertsMesh) Webhooks() ([]raftstore.NotifyHook, uint64) {
	if m.n.cl == nil {
		if m.n.cfg.Cluster.Enabled {
			return m.n.savedWebhooks()
		}
		return nil, 0
	}
	hooks, at := m.n.cl.Registry().NotifyHooks()
	if at == 0 {
		return m.n.savedWebhooks()
	}
	m.n.saveWebhooks(hooks, at)
	return hooks, at
}

// metaWebhooks is the ledger's meta key of the last applied webhook set.
const metaWebhooks = "notify.webhooks"

type savedHooks struct {
	Index uint64                 `json:"index"`
	Hooks []raftstore.NotifyHook `json:"hooks"`
}

// saveWebhooks keeps the set at index in the ledger, once per index.
func (n *Node) saveWebhooks(hooks []raftstore.NotifyHook, at uint64) {
	if n.ledger == nil || n.hooksSaved.Load() == at {
		return
	}
	b, err := json.Marshal(savedHooks{Index: at, Hooks: hooks})
	if err == nil {
		err = n.ledger.PutMeta(metaWebhooks, b)
	}
	if err != nil {
		n.log.Warn("notify: keeping the webhooks in the ledger", "err", err)
		return
	}
	n.hooksSaved.Store(at)
}

// savedWebhooks is the last set saveWebhooks kept (none: nil, 0).
func (n *Node) savedWebhooks() ([]raftstore.NotifyHook, uint64) {
	if n.ledger == nil {
		return nil, 0
	}
	b, err := n.ledger.GetMeta(metaWebhooks)
	if err != nil || len(b) == 0 {
		return nil, 0
	}
	var v savedHooks
	if json.Unmarshal(b, &v) != nil {
		return nil, 0
	}
	n.hooksSaved.Store(v.Index)
	return v.Hooks, v.Index
}

// Unreachable lists the live sessions of the nodes the mesh knows and
// cannot reach (dead or left).
func (m alertsMesh) Unreachable() []alerts.Remote {
	if m.n.cl == nil {
		return nil
	}
	members := m.n.reachability()
	down := false
	for name, mb := range members {
		if name != m.n.cfg.Name && !reachable(mb, true) {
			down = true
			break
		}
	}
	if !down {
		return nil
	}
	var out []alerts.Remote
	for _, rec := range m.n.cl.Registry().List() {
		if rec.Ended || rec.Node == "" || rec.Node == m.n.cfg.Name {
			continue
		}
		if mb, known := members[rec.Node]; known && !reachable(mb, known) {
			out = append(out, alerts.Remote{State: recordState(&rec), Since: mb.Since})
		}
	}
	return out
}

// The notify list's rows, in wire.
type (
	WebhookView = wire.WebhookView
	DesktopView = wire.DesktopView
)

// meshHooks reads the mesh's webhooks from the local replica.
func (n *Node) meshHooks() ([]notify.Webhook, error) {
	if n.cl == nil && n.cfg.Cluster.Enabled {
		return nil, fmt.Errorf("%w: the node is still joining its mesh; retry in a moment", ErrNoLeader)
	}
	if n.cl == nil {
		return nil, ErrNoMesh
	}
	raw, _ := n.cl.Registry().NotifyHooks()
	hooks, err := alerts.DecodeHooks(raw)
	if err != nil {
		n.log.Warn("notify: unusable webhooks in the registry", "err", err)
	}
	return hooks, nil
}

// NotifyList returns the mesh's webhooks with this node's counts.
func (n *Node) NotifyList() ([]WebhookView, DesktopView, error) {
	hooks, err := n.meshHooks()
	if err != nil {
		return nil, DesktopView{}, err
	}
	st := n.alerts.Stats()
	byID := map[string]notify.WebhookStats{}
	for _, w := range st.Webhooks {
		byID[w.ID] = w
	}
	out := make([]WebhookView, 0, len(hooks))
	for _, h := range hooks {
		v := WebhookView{ID: h.ID, URL: h.Redacted(), Format: string(h.Format), On: []string{}}
		for _, k := range h.On {
			v.On = append(v.On, string(k))
		}
		if s, ok := byID[h.ID]; ok {
			v.Queued, v.Sent, v.Failed, v.Dropped, v.Retries, v.LastError =
				s.Queued, s.Sent, s.Failed, s.Dropped, s.Retries, s.LastError
			v.LastErrorAt = presence.FormatTime(s.LastErrorAt)
		}
		out = append(out, v)
	}
	d := DesktopView{Enabled: n.desktopOn, Asked: n.cfg.Notify.Desktop && !n.desktopOn, Shown: st.Desktop.Shown, Failed: st.Desktop.Failed, Dropped: st.Desktop.Dropped}
	return out, d, nil
}

// NotifyAdd adds a webhook to the mesh (or updates the kinds of the same
// URL and format). changed is false when the same webhook was there.
func (n *Node) NotifyAdd(ctx context.Context, url, on, format string) (id string, changed bool, err error) {
	w, err := notify.NewWebhook(url, on, format)
	if err != nil {
		return "", false, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	if err := notify.CheckTarget(ctx, w.URL, n.cfg.Notify.AllowPrivate); err != nil {
		return "", false, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	hooks, err := n.meshHooks()
	if err != nil {
		return "", false, err
	}
	others := make([]notify.Webhook, 0, len(hooks)+1)
	for _, h := range hooks {
		if h.ID == w.ID {
			if slices.Equal(h.On, w.On) {
				return w.ID, false, nil
			}
			continue
		}
		others = append(others, h)
	}
	if _, err := notify.EncodeConfigs(append(others, w)); err != nil {
		return "", false, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	spec, err := alerts.EncodeHook(w)
	if err != nil {
		return "", false, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	return w.ID, true, n.notifyWrite(ctx, raftstore.NotifySetCommand(w.ID, spec))
}

// NotifyRemove removes a webhook from the mesh.
func (n *Node) NotifyRemove(ctx context.Context, id string) error {
	hooks, err := n.meshHooks()
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(hooks, func(h notify.Webhook) bool { return h.ID == id }) {
		return fmt.Errorf("%w: %q", ErrUnknownWebhook, id)
	}
	return n.notifyWrite(ctx, raftstore.NotifyRemoveCommand(id))
}

// notifyWrite writes a notify command through the leader and waits until
// this node's replica and engine have it.
func (n *Node) notifyWrite(ctx context.Context, cmd raftstore.Command) error {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.Cluster.RegistrySyncTimeout)
	defer cancel()
	idx, err := n.cl.Apply(ctx, cmd)
	if errors.Is(err, raftstore.ErrNotifyFull) {
		return fmt.Errorf("%w: %w", ErrRefused, err)
	}
	if errors.Is(err, ErrTrust) { // the leader's write authority: final
		return fmt.Errorf("node: the mesh's webhooks: %w", err)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNoLeader, err)
	}
	if err := n.cl.Registry().WaitForApplied(ctx, idx); err != nil {
		return fmt.Errorf("%w: %w", ErrNoLeader, err)
	}
	n.alerts.Sync()
	return nil
}

// Wait blocks until the session named by handle (or, with any, any live
// session) is in the state want, and returns its roster entry. It looks
// at the roster on every change of this node's sessions and every
// WaitPoll; it ends with ctx (ctx.Err) or when the session ended without
// coming to the state (ErrWaitEnded).
func (n *Node) Wait(ctx context.Context, handle string, any bool, want alerts.WaitFor) (RosterEntry, error) {
	id := ""
	if !any {
		entries, _, err := n.Roster(ctx, true, false)
		if err != nil {
			return RosterEntry{}, err
		}
		cands := make([]candidate, len(entries))
		for i := range entries {
			cands[i] = candidate{id: entries[i].State.SessionID, name: entries[i].State.Name, ended: entries[i].State.Ended}
		}
		if id, err = pickHandle(handle, cands); err != nil {
			return RosterEntry{}, err
		}
	}
	t := n.cfg.Clock.NewTicker(WaitPoll)
	defer t.Stop()
	for {
		changed := n.alerts.Changes()
		entries, _, err := n.Roster(ctx, !any, false)
		if err != nil {
			return RosterEntry{}, err
		}
		if e, found, err := pickWaited(entries, id, want); err != nil || found {
			return e, err
		}
		select {
		case <-ctx.Done():
			return RosterEntry{}, ctx.Err()
		case <-n.stop:
			return RosterEntry{}, ErrClosed
		case <-changed:
		case <-t.C():
		}
	}
}

// pickWaited finds, in a roster, the session id (or, when id is empty,
// the first live session) in the state want, as `harn agents list` shows
// states (a subagent's input request surfaces on its parent).
func pickWaited(entries []RosterEntry, id string, want alerts.WaitFor) (RosterEntry, bool, error) {
	states := make([]presence.State, len(entries))
	for i := range entries {
		states[i] = entries[i].State
	}
	presence.SurfaceChildren(states)
	for i := range entries {
		st := &states[i]
		if id != "" && st.SessionID != id {
			continue
		}
		if id == "" && st.Ended {
			continue
		}
		if want.Holds(st) {
			e := entries[i]
			if e.State.Activity != st.Activity {
				e.State = *st
			}
			return e, true, nil
		}
		if id != "" && want.Never(st) {
			return RosterEntry{}, false, fmt.Errorf("%w: %s ended without being %s; %w", ErrWaitEnded, id, want, ErrRefused)
		}
	}
	return RosterEntry{}, false, nil
}

// Notify serves `harn notify add|list|remove`.
func (s *localService) Notify(ctx context.Context, req *api.NotifyRequest) (*api.NotifyResponse, error) {
	n := s.n
	out := &api.NotifyResponse{Node: n.cfg.Name}
	var err error
	switch req.Op {
	case "add":
		out.Id, out.Changed, err = n.NotifyAdd(ctx, req.Url, req.On, req.Format)
	case "remove":
		out.Id, out.Changed = req.Id, true
		err = n.NotifyRemove(ctx, req.Id)
	case "list":
	default:
		err = fmt.Errorf("%w: notify op %q; use add, list or remove", ErrBadRequest, req.Op)
	}
	if errors.Is(err, ErrUnknownWebhook) {
		return nil, status.Error(codes.NotFound, err.Error())
	}
	if err != nil {
		return nil, statusErr(err)
	}
	views, desk, err := n.NotifyList()
	if err != nil {
		return nil, statusErr(err)
	}
	for i := range views {
		out.Webhooks = append(out.Webhooks, wire.WebhookToAPI(&views[i]))
	}
	out.Desktop = wire.DesktopToAPI(desk)
	return out, nil
}

// Wait serves `harn agents wait`: a timeout is an answer (timed_out), not
// an error.
func (s *localService) Wait(ctx context.Context, req *api.WaitRequest) (*api.WaitResponse, error) {
	want, err := alerts.ParseWaitFor(req.For)
	if err != nil {
		return nil, statusErr(fmt.Errorf("%w: %w", ErrBadRequest, err))
	}
	if req.Any == (req.Id != "") {
		return nil, statusErr(fmt.Errorf("%w: give a session id or --any, not both or neither", ErrBadRequest))
	}
	wctx := ctx
	if req.TimeoutMs > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMs)*time.Millisecond)
		defer cancel()
	}
	e, err := s.n.Wait(wctx, req.Id, req.Any, want)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return &api.WaitResponse{TimedOut: true}, nil
		}
		if ctx.Err() != nil {
			return nil, status.Error(codes.Canceled, "node: the wait was cancelled")
		}
		return nil, statusErr(err)
	}
	b, err := e.Encode()
	if err != nil {
		return nil, statusErr(err)
	}
	return &api.WaitResponse{SessionJson: b}, nil
}
