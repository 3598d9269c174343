// Package notifysvc is the notifications' service: it opens the
// notifications room (node/alerts) and the one-decision tokens of its
// buttons (node/acttoken), gives the room its views of the node and the
// mesh (the leader that notifies for unreachable nodes, the mesh's
// webhooks, kept in the ledger for a restart without a leader), answers
// the local socket's Notify call (the mesh's webhooks: add, list,
// remove) and the board's POST /act. It reads the rest of the node
// through the interfaces and funcs of Deps, declared here.
package notifysvc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/acttoken"
	"github.com/harn-dev/harn/node/alerts"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/cluster"
	"github.com/harn-dev/harn/node/meshtrust"
	"github.com/harn-dev/harn/node/notify"
	"github.com/harn-dev/harn/node/operator"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/raftstore"
	"github.com/harn-dev/harn/util/clock"
)

// Mesh is what the service needs of the mesh.
type Mesh interface {
	Registry() cluster.Replica
	Apply(ctx context.Context, cmd raftstore.Command) (uint64, error)
}

// Meta is the ledger's metadata and key-value space.
type Meta interface {
	acttoken.KV
	PutMeta(key string, v []byte) error
	GetMeta(key string) ([]byte, error)
}

// Deps wires the service to the rest of the node.
type Deps struct {
	Node  string
	Log   *slog.Logger
	Clock clock.Clock
	Meta  Meta
	// MeshOn says the node runs the mesh (Mesh may still be nil while it
	// joins); Voter that it is a server.
	MeshOn, Voter bool
	Mesh          func() Mesh
	Members       func() map[string]mesh.Member
	Reachable     func(m mesh.Member, known bool) bool
	RecordState   func(*raftstore.Record) presence.State
	// SyncTimeout bounds a webhook's registry write.
	SyncTimeout time.Duration
	// Own are this node's sessions; Waiting its calls that wait for an
	// operator; Tasks its task runtimes (nil until they open).
	Own     func() []presence.State
	Waiting func() []tasks.Request
	Tasks   func() *tasks.Host
	// BoardBase is the board's URL without its token, "" without one.
	BoardBase func() string
	// OnApprovals is told when a permission request opens, is answered
	// or expires (the board repaints).
	OnApprovals func()
	// Status maps an error to the local socket's status.
	Status func(error) error
}

// Service is the notifications' service.
type Service struct {
	Deps
	cfg    Config
	alerts *alerts.Room
	acts   *acttoken.Store
	// desktopOn: desktop notifications are asked for and a program to
	// show them exists (notify-send or osascript).
	desktopOn bool
	// hooksSaved is the registry index of the webhook set kept in the
	// ledger.
	hooksSaved atomic.Uint64
}

// Open opens the tokens and the notifications room. It starts nothing:
// Run runs the room.
func Open(c Config, d Deps) *Service {
	s := &Service{Deps: d, cfg: c}
	s.openActTokens()
	s.openAlerts()
	return s
}

// Room is the notifications room.
func (s *Service) Room() *alerts.Room { return s.alerts }

func (s *Service) cl() Mesh { return s.Mesh() }

// NotifyLocal is the service's part of the Local service.
type NotifyLocal struct{ *Service }

// Local is the service's part of the local socket.
func (s *Service) Local() *NotifyLocal { return &NotifyLocal{s} }

// The wiring of the notifications room (node/alerts): its config, the
// views of the node and the mesh it reads, and the local service's Notify
// and Wait calls.

// Config configures notifications.
type Config struct {
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

// Notify errors.
var (
	// ErrUnknownWebhook: no webhook of the mesh has that ID.
	ErrUnknownWebhook = errors.New("node: no webhook has that id; see `harn notify list`")
)

// openAlerts builds the notifications room and records the node's
// sessions as already told. It runs before the spool drains, so that what
// happened while the node was down is told.
func (s *Service) openAlerts() {
	nc := s.cfg
	ac := alerts.Config{Clock: s.Clock, Logger: s.Log, Engine: nc.Engine, Sender: nc.Sender,
		SilenceAfter: nc.SilenceAfter, Link: s.Link, Permission: s.waitingPermission,
		Actions: s.Buttons}
	if ac.Sender == nil {
		ac.Sender = notify.NewHTTPSender(0, nc.AllowPrivate)
	}
	if nc.Desktop {
		if nc.DesktopNotifier != nil {
			ac.Desktop = nc.DesktopNotifier
		} else if d := notify.NewExecDesktop(0); d.Available() {
			ac.Desktop = d
		} else {
			s.Log.Debug("notify: neither notify-send nor osascript exists; no desktop notifications")
		}
	}
	s.desktopOn = ac.Desktop != nil
	s.alerts = alerts.New(ac, alertsSessions{s}, alertsMesh{s})
	s.alerts.Baseline(s.Own())
}

// Link is a session's page on this node's board, without the
// token ("" without a board).
func (s *Service) Link(session string) string {
	base := s.BoardBase()
	if base == "" || session == "" {
		return ""
	}
	return strings.TrimSuffix(base, "/") + "/s/" + url.PathEscape(session)
}

// waitingPermission is the newest call of a session of this node that
// waits for an operator (a permission request or a task confirmation),
// with what it asks, as a message tells it.
func (s *Service) waitingPermission(session string) *notify.Permission {
	var out *notify.Permission
	for _, r := range s.Waiting() {
		if r.Session == session {
			out = &notify.Permission{ID: r.ID, Kind: r.Kind, Tool: r.Tool, Summary: r.Summary, Detail: r.Detail,
				Command: r.Command, CommandCut: r.CommandCut, Cwd: r.Cwd, Path: r.Path, Diff: r.Diff, DiffCut: r.DiffCut,
				Opened: r.Opened}
		}
	}
	return out
}

// alertsSessions is the room's view of the node's own sessions.
type alertsSessions struct{ s *Service }

func (a alertsSessions) Own() []presence.State { return a.s.Own() }

// alertsMesh is the room's view of the mesh; without one it leads nothing
// and holds no webhooks.
type alertsMesh struct{ s *Service }

// Leading reports whether this node announces the unreachable nodes: it
// leads the registry, or the registry has no leader and this node is the
// first by name of the servers it can reach. A 2-server mesh with one down
// has no leader; the other server announces it. All the servers that see
// the same members pick the same one, so a node is announced at most once.
func (m alertsMesh) Leading() bool {
	s := m.s
	if s.cl() == nil {
		return false
	}
	if s.cl().Registry().IsLeader() {
		return true
	}
	if id, _ := s.cl().Registry().Leader(); id != "" {
		return false
	}
	return s.Voter && firstServer(s.Node, s.Members(), s.Reachable)
}

// firstServer reports whether self is the first by name of the reachable
// servers in members (self counts as reachable).
func firstServer(self string, members map[string]mesh.Member, reachable func(mesh.Member, bool) bool) bool {
	for name, mb := range members {
		if name != self && name < self && mb.Meta.Role == mesh.RoleServer && reachable(mb, true) {
			return false
		}
	}
	return true
}

func (m alertsMesh) Leader() string {
	s := m.s
	if s.cl() == nil {
		return ""
	}
	id, _ := s.cl().Registry().Leader()
	return id
}

// Webhooks are the registry's webhooks. Until the local replica holds
// any (right after a restart, while the registry catches up) they are the
// last set this node applied, kept in its ledger, so that a restarted
// node tells what happens in its first seconds.
func (m alertsMesh) Webhooks() ([]raftstore.NotifyHook, uint64) {
	s := m.s
	if s.cl() == nil {
		if s.MeshOn {
			return s.savedWebhooks()
		}
		return nil, 0
	}
	hooks, at := s.cl().Registry().NotifyHooks()
	if at == 0 {
		return s.savedWebhooks()
	}
	s.saveWebhooks(hooks, at)
	return hooks, at
}

// metaWebhooks is the ledger's meta key of the last applied webhook set.
const metaWebhooks = "notify.webhooks"

type savedHooks struct {
	Index uint64                 `json:"index"`
	Hooks []raftstore.NotifyHook `json:"hooks"`
}

// saveWebhooks keeps the set at index in the ledger, once per index.
func (s *Service) saveWebhooks(hooks []raftstore.NotifyHook, at uint64) {
	if s.Meta == nil || s.hooksSaved.Load() == at {
		return
	}
	b, err := json.Marshal(savedHooks{Index: at, Hooks: hooks})
	if err == nil {
		err = s.Meta.PutMeta(metaWebhooks, b)
	}
	if err != nil {
		s.Log.Warn("notify: keeping the webhooks in the ledger", "err", err)
		return
	}
	s.hooksSaved.Store(at)
}

// savedWebhooks is the last set saveWebhooks kept (none: nil, 0).
func (s *Service) savedWebhooks() ([]raftstore.NotifyHook, uint64) {
	if s.Meta == nil {
		return nil, 0
	}
	b, err := s.Meta.GetMeta(metaWebhooks)
	if err != nil || len(b) == 0 {
		return nil, 0
	}
	var v savedHooks
	if json.Unmarshal(b, &v) != nil {
		return nil, 0
	}
	s.hooksSaved.Store(v.Index)
	return v.Hooks, v.Index
}

// Unreachable lists the live sessions of the nodes the mesh knows and
// cannot reach (dead or left).
func (m alertsMesh) Unreachable() []alerts.Remote {
	s := m.s
	if s.cl() == nil {
		return nil
	}
	members := s.Members()
	down := false
	for name, mb := range members {
		if name != s.Node && !s.Reachable(mb, true) {
			down = true
			break
		}
	}
	if !down {
		return nil
	}
	var out []alerts.Remote
	for _, rec := range s.cl().Registry().List() {
		if rec.Ended || rec.Node == "" || rec.Node == s.Node {
			continue
		}
		if mb, known := members[rec.Node]; known && !s.Reachable(mb, known) {
			out = append(out, alerts.Remote{State: s.RecordState(&rec), Since: mb.Since})
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
func (s *Service) meshHooks() ([]notify.Webhook, error) {
	if s.cl() == nil && s.MeshOn {
		return nil, fmt.Errorf("%w: the node is still joining its mesh; retry in a moment", cluster.ErrNoLeader)
	}
	if s.cl() == nil {
		return nil, cluster.ErrNoMesh
	}
	raw, _ := s.cl().Registry().NotifyHooks()
	hooks, err := alerts.DecodeHooks(raw)
	if err != nil {
		s.Log.Warn("notify: unusable webhooks in the registry", "err", err)
	}
	return hooks, nil
}

// List returns the mesh's webhooks with this node's counts.
func (s *Service) List() ([]WebhookView, DesktopView, error) {
	hooks, err := s.meshHooks()
	if err != nil {
		return nil, DesktopView{}, err
	}
	st := s.alerts.Stats()
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
	d := DesktopView{Enabled: s.desktopOn, Asked: s.cfg.Desktop && !s.desktopOn, Shown: st.Desktop.Shown, Failed: st.Desktop.Failed, Dropped: st.Desktop.Dropped}
	return out, d, nil
}

// Add adds a webhook to the mesh (or updates the kinds of the same
// URL and format). changed is false when the same webhook was there.
func (s *Service) Add(ctx context.Context, url, on, format string) (id string, changed bool, err error) {
	w, err := notify.NewWebhook(url, on, format)
	if err != nil {
		return "", false, fmt.Errorf("%w: %w", operator.ErrBadRequest, err)
	}
	if err := notify.CheckTarget(ctx, w.URL, s.cfg.AllowPrivate); err != nil {
		return "", false, fmt.Errorf("%w: %w", operator.ErrRefused, err)
	}
	hooks, err := s.meshHooks()
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
		return "", false, fmt.Errorf("%w: %w", operator.ErrRefused, err)
	}
	spec, err := alerts.EncodeHook(w)
	if err != nil {
		return "", false, fmt.Errorf("%w: %w", operator.ErrBadRequest, err)
	}
	return w.ID, true, s.notifyWrite(ctx, raftstore.NotifySetCommand(w.ID, spec))
}

// Remove removes a webhook from the mesh.
func (s *Service) Remove(ctx context.Context, id string) error {
	hooks, err := s.meshHooks()
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(hooks, func(h notify.Webhook) bool { return h.ID == id }) {
		return fmt.Errorf("%w: %q", ErrUnknownWebhook, id)
	}
	return s.notifyWrite(ctx, raftstore.NotifyRemoveCommand(id))
}

// notifyWrite writes a notify command through the leader and waits until
// this node's replica and engine have it.
func (s *Service) notifyWrite(ctx context.Context, cmd raftstore.Command) error {
	ctx, cancel := context.WithTimeout(ctx, s.SyncTimeout)
	defer cancel()
	idx, err := s.cl().Apply(ctx, cmd)
	if errors.Is(err, raftstore.ErrNotifyFull) {
		return fmt.Errorf("%w: %w", operator.ErrRefused, err)
	}
	if errors.Is(err, meshtrust.ErrTrust) { // the leader's write authority: final
		return fmt.Errorf("node: the mesh's webhooks: %w", err)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", cluster.ErrNoLeader, err)
	}
	if err := s.cl().Registry().WaitForApplied(ctx, idx); err != nil {
		return fmt.Errorf("%w: %w", cluster.ErrNoLeader, err)
	}
	s.alerts.Sync()
	return nil
}

// Notify serves `harn notify add|list|remove`.
func (s *NotifyLocal) Notify(ctx context.Context, req *api.NotifyRequest) (*api.NotifyResponse, error) {
	out := &api.NotifyResponse{Node: s.Node}
	var err error
	switch req.Op {
	case "add":
		out.Id, out.Changed, err = s.Add(ctx, req.Url, req.On, req.Format)
	case "remove":
		out.Id, out.Changed = req.Id, true
		err = s.Remove(ctx, req.Id)
	case "list":
	default:
		err = fmt.Errorf("%w: notify op %q; use add, list or remove", operator.ErrBadRequest, req.Op)
	}
	if errors.Is(err, ErrUnknownWebhook) {
		return nil, status.Error(codes.NotFound, err.Error())
	}
	if err != nil {
		return nil, s.Status(err)
	}
	views, desk, err := s.List()
	if err != nil {
		return nil, s.Status(err)
	}
	for i := range views {
		out.Webhooks = append(out.Webhooks, WebhookToAPI(&views[i]))
	}
	out.Desktop = DesktopToAPI(desk)
	return out, nil
}

// WebhookToAPI is a webhook's view on the wire.
func WebhookToAPI(w *wire.WebhookView) *api.Webhook {
	return &api.Webhook{Id: w.ID, Url: w.URL, Format: w.Format, On: w.On, Queued: int32(w.Queued), Sent: w.Sent,
		Failed: w.Failed, Dropped: w.Dropped, Retries: w.Retries, LastError: w.LastError, LastErrorAt: w.LastErrorAt}
}

// DesktopToAPI is the desktop notifier's view on the wire.
func DesktopToAPI(d wire.DesktopView) *api.Desktop {
	return &api.Desktop{Enabled: d.Enabled, Asked: d.Asked, Shown: d.Shown, Failed: d.Failed, Dropped: d.Dropped}
}
