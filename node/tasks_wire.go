package node

import (
	"os"
	"time"

	"github.com/harn-dev/harn/node/coordsvc"
	"github.com/harn-dev/harn/node/roster"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/node/tasksvc"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/runtime/agent"
	"github.com/harn-dev/harn/runtime/agent/tools"
)

// openTasks builds the task runtime host on the node's ledger and key.
func (n *Node) openTasks() error {
	// HARN_TASK_GRACE sets the barrier's grace period (and the time from
	// SIGINT to SIGKILL); default 10 s.
	grace, _ := time.ParseDuration(os.Getenv("HARN_TASK_GRACE"))
	var tracer agent.Tracer
	if n.cfg.TracerProvider != nil {
		tracer = tasks.GenAITracer(n.tracer, n.cfg.LogPrompts)
	}
	h, err := tasks.New(tasks.Config{Node: n.cfg.Name, KV: n.ledger, Key: n.key, Grace: grace, Tracer: tracer,
		Sink: sinkFunc(func(evs []presence.Event) error { _, err := n.Ingest(evs); return err }),
		// The ingest is a synced write to the same ledger as KV.
		IngestSyncsKV: true,
		Sessions:      sessionsFunc(func(h string) (presence.State, error) { return n.sess.Resolve(h) }), Clock: n.cfg.Clock, Logger: n.log.With("room", "tasks"),
		Env:      []string{"HARN_DATA_DIR=" + n.cfg.DataDir, "HARN_SOCKET=" + n.cfg.Socket},
		OnChange: n.taskChanged, OnFirstByte: n.cfg.OnTaskFirstByte, Launchers: n.cfg.Launchers, NoCompaction: n.cfg.NoCompaction,
		Bounds:   n.cfg.AgentBounds,
		Provider: n.cfg.Provider,
		// Each harn session gets its own tool box: the core and discovery
		// tools, the skills of its project (when trusted) and of the user,
		// the servers of the user's (this node's) and the trusted
		// project's mcp.json, then its own --mcp servers.
		Boxes: tasks.Toolboxes(tools.Config{Clock: n.cfg.Clock, Logger: n.log.With("room", "tools"),
			ShellGrace: tasks.ShellGraceFor(grace), Guard: n.cfg.ToolGuard, OnGroup: n.keep.RecordToolGroup}),
		// A project's .harn files load only where this node trusts it.
		Trust: n.trust.ProjectTrust()})
	if err != nil {
		return err
	}
	n.tasks = h
	n.remotePol = remotePolicy(n.cfg, n.log)
	n.taskSvc = tasksvc.New(tasksvc.Deps{Node: n.cfg.Name, Log: n.log, Clock: n.cfg.Clock, Tasks: h, Gate: n.gate,
		Policy: n.RemotePolicy, Sessions: n.sess, Record: n.roster.ResolveRecord,
		Mesh: func() tasksvc.Mesh {
			if n.cl == nil {
				return nil
			}
			return n.cl
		},
		Members: func() map[string]bool {
			out := map[string]bool{}
			for name, m := range n.roster.Reachability() {
				out[name] = roster.Reachable(m, true)
			}
			return out
		},
		OwnerReadTimeout: n.cfg.Cluster.OwnerReadTimeout, ForwardTimeout: n.cfg.Cluster.ForwardTimeout, Claims: n.claims.Load, Diagnose: n.keep.AddDiagnostic,
		Facts: n.roster.Facts, Waiting: n.roster.Waiting})
	n.coord = coordsvc.New(coordsvc.Deps{Node: n.cfg.Name, Log: n.log, Clock: n.cfg.Clock, Mode: n.cfg.Claims, Gate: n.gate,
		Tasks: h, Procs: n.procs, Sessions: n.sess, Ingest: func(evs []presence.Event) error { _, err := n.Ingest(evs); return err },
		Mesh: func() coordsvc.Mesh {
			if n.cl == nil {
				return nil
			}
			return n.cl
		},
		Record: n.roster.ResolveRecord, Members: n.taskSvc.Members, Claims: n.claims.Load, Journal: n.ledger, Diagnose: n.keep.AddDiagnostic})
	n.wireApprovals()
	// What tools of the previous run still run (it died) goes first.
	n.keep.ReapToolGroups()
	// Runtime sessions are memory-only: end those the previous run left.
	live := n.sess.Live()
	if _, err := h.Recover(live); err != nil {
		n.log.Warn("closing the previous run's runtime sessions", "err", err)
	}
	// Task records and unknown-outcome holds come back from the ledger:
	// `harn task show` answers for them, and a hold still waits for ack.
	if _, err := h.Rebuild(live); err != nil {
		n.log.Warn("rebuilding task records from the ledger", "err", err)
	}
	// Children are not resumed either: each parent's trace says which
	// were lost.
	if lost, err := h.RecoverSubagents(); err != nil || len(lost) > 0 {
		n.log.Info("subagents lost at the restart", "count", len(lost), "err", err)
	}
	return nil
}

type sinkFunc func([]presence.Event) error

func (f sinkFunc) Ingest(evs []presence.Event) error { return f(evs) }

type sessionsFunc func(string) (presence.State, error)

func (f sessionsFunc) Resolve(h string) (presence.State, error) { return f(h) }

// Tasks is the node's task runtime host (tests, benchmarks).
func (n *Node) Tasks() *tasks.Host { return n.tasks }

// taskChanged gossips a session's entry
// again: a task's state changed without a presence event.
func (n *Node) taskChanged(session string) {
	st, hash, ok := n.sess.Invalidate(session)
	if ok && n.cl != nil && !st.Ended {
		n.cl.Publish(st, hash, true, false)
	}
}
