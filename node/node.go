// Package node is the harn daemon's composition root: it only wires. Open
// opens its rooms in order and Close closes them; it holds the service
// adapters (the local wire on the unix socket, the cluster gRPC) that turn
// requests into calls on the rooms.
//
// The rooms: node/sessions is the local half (this node's sessions, their
// naming, ingest and resolution), which tells its subscribers (the
// heartbeat files, the cluster's publish, the task host, the alerts, the
// transcript watcher, the metrics) after each write; node/ledger the
// durable record; node/tasks the task runtimes; node/cluster joins the
// gossip mesh (mesh) and the registry (raftstore) and builds presence
// gossip (node/gossip), the registry writer (node/registry) and the
// leader-forwarding path (node/forward) on them, with the mesh's trust
// wired to the registry by node/meshtrust; the node reaches the cluster
// only through its methods (cluster_wire.go). See
// DESIGN.md in this folder, and docs/design.md, "The house".
package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sys/unix"

	"github.com/harn-dev/harn/node/alerts"
	"github.com/harn-dev/harn/node/alerts/notifysvc"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/board"
	"github.com/harn-dev/harn/node/changes"
	"github.com/harn-dev/harn/node/claims"
	"github.com/harn-dev/harn/node/cluster"
	"github.com/harn-dev/harn/node/coordsvc"
	"github.com/harn-dev/harn/node/declare"
	"github.com/harn-dev/harn/node/gitcheck"
	"github.com/harn-dev/harn/node/gossip"
	"github.com/harn-dev/harn/node/heartbeat"
	"github.com/harn-dev/harn/node/hosted/hostedsvc"
	"github.com/harn-dev/harn/node/ledger"
	"github.com/harn-dev/harn/node/localapi"
	"github.com/harn-dev/harn/node/metrics"
	"github.com/harn-dev/harn/node/operator"
	"github.com/harn-dev/harn/node/remint"
	"github.com/harn-dev/harn/node/remotepolicy"
	"github.com/harn-dev/harn/node/roster"
	"github.com/harn-dev/harn/node/sessions"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/node/tasksvc"
	"github.com/harn-dev/harn/node/tracing"
	"github.com/harn-dev/harn/node/trustadmin"
	"github.com/harn-dev/harn/node/upkeep"
	"github.com/harn-dev/harn/node/web"
	"github.com/harn-dev/harn/presence"
)

// ProcChecker tells whether an agent process still exists.
type ProcChecker interface {
	Alive(pid int, start uint64) bool
}

// Node is the daemon. Build it with New, start it with Open, stop it with
// Close.
type Node struct {
	cfg   Config
	log   *slog.Logger
	procs ProcChecker

	ledger *ledger.Ledger
	lock   *os.File
	key    []byte

	sess *sessions.Store   // this node's sessions (node/sessions); nil until Open
	decl *declare.Declarer // declarations about them (node/declare); nil until Open
	keep *upkeep.Keeper    // spool, reaper, diagnostics (node/upkeep); nil until Open
	seen *remint.Watcher   // whether agents showed their re-minted names (node/remint)

	tasks   *tasks.Host       // the task runtimes (node/tasks)
	taskSvc *tasksvc.Service  // their service (node/tasksvc); nil until openTasks
	coord   *coordsvc.Service // claims, end, ping (node/coordsvc); nil until openTasks
	hosts   *hostedsvc.Host   // agents in terminals the node owns (node/hosted/hostedsvc)
	// remotePol is what a caller on another node may choose for a task
	// here (node/remotepolicy; remote_policy.go); set by openTasks.
	remotePol remotepolicy.Config
	trust     *trustadmin.Service // mesh and directory trust (node/trustadmin)
	gate      *operator.Gate      // who on other nodes may act here (node/operator)
	notes     *notifysvc.Service  // notifications' service (node/alerts/notifysvc)
	alerts    *alerts.Room        // notifications (node/alerts), the service's room
	cl        *cluster.Cluster    // nil without the mesh
	remote    *gossip.Table       // what other nodes gossip
	roster    *roster.Roster      // every session on every node (node/roster; roster_wire.go)

	// claims is the write-claim room (node/claims); nil until Open built it.
	claims atomic.Pointer[claims.Decider]

	proj     *heartbeat.Projector
	changes  *changes.Broadcaster // heartbeat, gossip and registry changes (web.go)
	metrics  *metrics.Metrics     // /metrics (node/metrics)
	web      *web.Web             // the board and /metrics (node/web); nil without Open
	tracer   trace.Tracer         // no-op unless Config.TracerProvider is set
	lis      net.Listener
	local    *localapi.Server // the local socket's server (the local wire)
	sockInfo os.FileInfo
	started  time.Time

	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// New builds a node. It does no I/O.
func New(cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Cluster = cfg.Cluster.WithDefaults()
	procs := cfg.Procs
	if procs == nil {
		procs = upkeep.SystemProcs{}
	}
	if cfg.Git == nil {
		cfg.Git = declare.GitCLI{Config: gitcheck.DefaultConfig()}
	}
	n := &Node{
		cfg: cfg, log: cfg.Logger.With("node", cfg.Name), procs: procs,
		remote:  gossip.NewTable(),
		changes: changes.New(), stop: make(chan struct{}), tracer: tracing.Tracer(cfg.TracerProvider),
	}
	n.metrics = metrics.New(metricsSource{n})
	n.roster = n.newRoster()
	n.trust = trustadmin.New(trustadmin.Deps{Node: cfg.Name, DataDir: cfg.DataDir, Log: n.log, Mesh: func() trustadmin.Mesh {
		if n.cl == nil {
			return nil
		}
		return n.cl
	}})
	n.gate = &operator.Gate{Node: cfg.Name, Log: n.log, HasTrust: func() bool { return n.cl != nil && n.cl.HasTrust() },
		Policy: func() operator.Policy {
			return operator.Policy{Control: n.cfg.Cluster.RemoteControl, Watch: n.cfg.Hosted.RemoteWatch, Exec: n.cfg.Cluster.RemoteExec}
		}}
	return n, nil
}

// Open takes the data dir, opens the ledger, rebuilds every session's live
// state, drains the spool, and starts serving. When it fails, it has
// closed everything it opened; a listener that cannot bind is a
// *ListenError.
func (n *Node) Open() error { return n.OpenContext(context.Background()) }

// OpenContext is Open, given up when ctx ends (a signal): a ledger open
// that the disk wedges then returns at once.
func (n *Node) OpenContext(ctx context.Context) error {
	if err := n.open(ctx); err != nil {
		n.Close()
		return err
	}
	return nil
}

func (n *Node) open(ctx context.Context) error {
	n.started = n.cfg.Clock.Now()
	// The data dir and all in it are private (0700/0600), even when it
	// exists as 0755: it holds the ledger's WAL, raft's log, the spool and
	// the heartbeats. See privateDataDir.
	if err := privateDataDir(n.cfg.DataDir); err != nil {
		return err
	}
	lf, err := os.OpenFile(n.cfg.lockPath(), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open lock: %w", err)
	}
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lf.Close()
		return fmt.Errorf("%w: %s is locked", ErrLocked, n.cfg.DataDir)
	}
	n.lock = lf
	if !n.cfg.noPortCheck {
		if err := n.checkPorts(); err != nil { // every busy port, in one line
			return err
		}
	}
	if n.key, err = LoadOrCreateKey(n.cfg.DataDir); err != nil {
		return err
	}
	n.proj = heartbeat.New(ActiveDir(n.cfg.DataDir), n.log, n.cfg.ProjectDelay, n.cfg.Clock)
	lc := ledger.DefaultConfig(n.cfg.ledgerDir())
	lc.Logger = n.log
	lc.Clock = n.cfg.Clock
	lc.OnRecover = n.proj.Redo // heartbeat writes that failed with the disk
	if n.cfg.ledgerTune != nil {
		n.cfg.ledgerTune(&lc)
	}
	octx, cancel := stopContext(ctx, n.stop)
	n.ledger, err = ledger.OpenContext(octx, lc)
	cancel()
	if err != nil {
		return err
	}
	n.sess = sessions.New(sessions.Config{Node: n.cfg.Name, Ledger: n.ledger, Clock: n.cfg.Clock,
		Logger: n.log, Tracer: n.tracer})
	n.keep = upkeep.New(upkeep.Deps{DataDir: n.cfg.DataDir, Clock: n.cfg.Clock, Log: n.log, Ledger: n.ledger, Sessions: n.sess,
		Ingest: func(evs []presence.Event) error { _, err := n.Ingest(evs); return err }, Procs: n.procs,
		SpoolInterval: n.cfg.SpoolInterval, ReapInterval: n.cfg.ReapInterval})
	n.decl = declare.New(declare.Deps{Clock: n.cfg.Clock, Sessions: n.sess, Ledger: n.ledger, Git: n.cfg.Git,
		Ingest: func(evs []presence.Event) error { _, err := n.Ingest(evs); return err }, SyncTimeout: n.cfg.Cluster.RegistrySyncTimeout,
		Writer: func() declare.Writer {
			if n.cl == nil {
				return nil
			}
			return n.cl.Writer()
		}})
	// The transcript watcher (node/remint) records session_name.seen off the hook's path.
	n.seen = remint.NewWatcher(remint.WatcherConfig{Reader: remint.New(remint.DefaultConfig()),
		State:  n.sess.State,
		Record: func(evs []presence.Event) error { _, err := n.Ingest(evs); return err },
		Clock:  n.cfg.Clock, Logger: n.log})
	n.subscribe()
	if err := n.sess.Rebuild(); err != nil {
		return err
	}
	n.seen.Start()
	n.proj.OnWrite(n.changes.Notify)
	n.proj.Reset(n.sess.Live())
	n.notes = notifysvc.Open(n.cfg.Notify, n.notifyDeps())
	n.alerts = n.notes.Room()
	n.keep.DrainSpool()
	if err := n.trust.Open(); err != nil {
		return err
	}
	if err := n.openTasks(); err != nil {
		return err
	}
	if n.hosts, err = hostedsvc.Open(n.cfg.Hosted, n.hostedDeps()); err != nil {
		return err
	}
	n.taskSvc.Hosted = n.hosts // a hosted session's steer and follow-up
	if err := n.listen(); err != nil {
		return err
	}
	if n.cfg.Cluster.Enabled {
		if c, err := n.openCluster(); err != nil {
			if c != nil {
				c.Close() // what it opened
			}
			return err
		}
	}
	// Tighten again what Pebble and raft created under a loose umask.
	if err := privateDataDir(n.cfg.DataDir); err != nil {
		return err
	}
	d, err := n.coord.OpenClaims()
	if err != nil {
		return err
	}
	n.claims.Store(d)
	if n.tasks != nil {
		n.tasks.Approvals().OnChange(n.notes.ApprovalsChanged)
	}
	if n.web, err = web.Open(n.cfg.Web, n.webDeps()); err != nil {
		return err
	}
	n.serve()
	n.keep.Run()
	n.start(func() { n.proj.Run(n.stop) }, func() { n.alerts.Run(n.stop) })
	n.log.Info("node started", "data_dir", n.cfg.DataDir, "socket", n.cfg.Socket,
		"sessions", n.sess.Len())
	return nil
}

func (n *Node) listen() error {
	if err := localapi.EnsureSocketDir(n.cfg.Socket); err != nil {
		return err
	}
	// A socket that answers belongs to another node (on another data
	// dir); one that does not is stale and is replaced.
	if c, err := net.DialTimeout("unix", n.cfg.Socket, 500*time.Millisecond); err == nil {
		c.Close()
		return fmt.Errorf("%w: socket %s is served by another node; pass another --socket", ErrLocked, n.cfg.Socket)
	}
	if err := os.Remove(n.cfg.Socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove stale socket: %w", err)
	}
	old := unix.Umask(0o177)
	lis, err := net.Listen("unix", n.cfg.Socket)
	unix.Umask(old)
	if err != nil {
		return &ListenError{Listener: "socket", Addr: n.cfg.Socket, Flag: "--socket", Err: err}
	}
	if err := os.Chmod(n.cfg.Socket, 0o600); err != nil {
		lis.Close()
		return fmt.Errorf("chmod socket: %w", err)
	}
	// Close removes the socket only if it is still the file made here.
	lis.(*net.UnixListener).SetUnlinkOnClose(false)
	n.sockInfo, _ = os.Stat(n.cfg.Socket)
	n.lis = lis
	local := &localServer{&localService{n: n}, n.taskSvc.Local(), n.coord.Local(), n.notes.Local(), n.trust.Local()}
	n.local = localapi.New(lis, api.LocalMethods(local), api.MeshAdminMethods(n.trust.Admin()), api.HostedMethods(n.hosts.Local()))
	if n.cfg.TracerProvider != nil {
		n.local.Wrap = localapi.Trace(n.tracer)
	}
	n.local.Attach = n.hosts.ServeAttach
	return nil
}

// serve answers the local socket. It starts when the node is fully open
// (cluster, claims and board too): a client that connects earlier waits
// in the listen queue, so no command is answered by a half-open node
// ("runs without the mesh", "serves no board") and a hook that cannot
// wait spools as it does for a node that is down.
func (n *Node) serve() {
	n.start(n.local.Run)
}

// start runs each fn in a goroutine the node owns.
func (n *Node) start(fns ...func()) {
	for _, fn := range fns {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			fn()
		}()
	}
}

// Close stops serving, waits for every goroutine, flushes heartbeats and
// closes the ledger. It is safe to call twice.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		close(n.stop)
		if n.keep != nil {
			n.keep.Close() // the spool and reap loops stop first, as the node stops
		}
		n.changes.Close() // first: the board's streams end
		n.web.Close()
		n.hosts.Close() // its processes end; their ends are recorded while the ledger is open
		if n.local != nil {
			n.local.Close()
		}
		if d := n.claims.Load(); d != nil {
			d.Close() // its retries write through the mesh and into the ledger
		}
		if n.tasks != nil {
			n.tasks.Close()
		}
		n.trust.Close()
		if n.seen != nil {
			n.seen.Close() // its reads record into the ledger
		}
		if n.cl != nil {
			n.cl.Close()
		}
		n.wg.Wait()
		if n.alerts != nil {
			n.alerts.Close()
		}
		if n.proj != nil {
			n.proj.Flush()
		}
		if n.ledger != nil {
			n.closeErr = n.ledger.Close()
		}
		if n.lis != nil && n.sockInfo != nil {
			if fi, err := os.Stat(n.cfg.Socket); err == nil && os.SameFile(fi, n.sockInfo) {
				os.Remove(n.cfg.Socket)
			}
		}
		if n.lock != nil {
			n.lock.Close()
		}
	})
	return n.closeErr
}

// Ledger exposes the ledger (tests and benchmarks).
func (n *Node) Ledger() *ledger.Ledger { return n.ledger }

// Name is the node's name.
func (n *Node) Name() string { return n.cfg.Name }

// stopContext returns a context that ends when stop closes (or cancel is
// called). Its watcher goroutine ends with it.
func stopContext(parent context.Context, stop <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// hostedDeps wires the hosting room to the rest of the node.
func (n *Node) hostedDeps() hostedsvc.Deps {
	return hostedsvc.Deps{Node: n.cfg.Name, DataDir: n.cfg.DataDir, Socket: n.cfg.Socket, Key: n.key,
		Launchers: n.cfg.Launchers, Clock: n.cfg.Clock, Log: n.log, Gate: n.gate, Sessions: n.sess, Gossip: n.remote,
		Sink: sinkFunc(func(evs []presence.Event) error { _, err := n.Ingest(evs); return err }), OnChange: n.taskChanged,
		Policy: func() remotepolicy.Config { // set at Open; computed before
			if n.remotePol.Node != "" {
				return n.remotePol
			}
			return remotePolicy(n.cfg, n.log)
		}, Record: n.roster.ResolveRecord, Stop: n.stop,
		Mesh: func() hostedsvc.Mesh {
			if n.cl == nil {
				return nil
			}
			return n.cl
		},
		Reachable: func() []string {
			var out []string
			for name, m := range n.roster.Reachability() {
				if roster.Reachable(m, true) {
					out = append(out, name)
				}
			}
			return out
		}}
}

// localServer is the Local service: the adapters of service.go and the
// rooms' own parts.
type localServer struct {
	*localService
	*tasksvc.TaskLocal
	*coordsvc.CoordLocal
	*notifysvc.NotifyLocal
	*trustadmin.TrustLocal
}

// notifyDeps wires the notifications' service to the rest of the node.
func (n *Node) notifyDeps() notifysvc.Deps {
	return notifysvc.Deps{Node: n.cfg.Name, Log: n.log, Clock: n.cfg.Clock, Meta: n.ledger,
		MeshOn: n.cfg.Cluster.Enabled, Voter: n.cfg.Cluster.Voter(),
		Mesh: func() notifysvc.Mesh {
			if n.cl == nil {
				return nil
			}
			return n.cl
		},
		Members: n.roster.Reachability, Reachable: roster.Reachable, RecordState: roster.RecordState,
		SyncTimeout: n.cfg.Cluster.RegistrySyncTimeout,
		Own:         func() []presence.State { return n.Sessions(false) }, Waiting: n.roster.Waiting,
		Tasks: func() *tasks.Host { return n.tasks }, BoardBase: func() string { return n.web.BaseURL() }, OnApprovals: n.changes.Notify,
		Status: statusErr}
}

// webDeps wires the web room to the rest of the node.
func (n *Node) webDeps() web.Deps {
	return web.Deps{Node: n.cfg.Name, DataDir: n.cfg.DataDir, Addr: n.cfg.HTTPAddr, Token: n.cfg.HTTPToken,
		Log: n.log, Clock: n.cfg.Clock, Changes: n.changes, Metrics: n.metrics.Handler(),
		Rows: func(ctx context.Context) ([]board.Row, error) {
			entries, _, err := n.roster.List(ctx, true, false, true)
			rows := make([]board.Row, len(entries))
			for i := range entries {
				rows[i] = board.RowOf(entries[i].Row())
			}
			return rows, err
		},
		Row: func(ctx context.Context, handle string) (board.Row, error) {
			e, _, err := n.roster.ReadSession(ctx, handle)
			return board.RowOf(e.Row()), err
		},
		Trace: func(ctx context.Context, handle string) ([]presence.Event, error) {
			_, evs, _, err := n.roster.ReadTrace(ctx, handle)
			out := make([]presence.Event, 0, len(evs))
			for _, e := range evs {
				if ev, err := wire.EventFromAPI(e); err == nil {
					out = append(out, ev)
				}
			}
			return out, err
		},
		Waiting: n.roster.Waiting, Members: n.taskSvc.Members, OwnerReadTimeout: n.cfg.Cluster.OwnerReadTimeout,
		Mesh: func() web.Mesh {
			if n.cl == nil {
				return nil
			}
			return n.cl
		},
		Tasks: n.taskSvc.Local(), Hoster: n.hosts.Board(), Decider: n.notes.Decider()}
}

// BoardURL is the board's URL with ?token=, or "" without a board.
func (n *Node) BoardURL() string { return n.web.URL() }

// Changes subscribes to the node's changes (see node/changes).
func (n *Node) Changes() (<-chan struct{}, func()) { return n.changes.Subscribe() }
