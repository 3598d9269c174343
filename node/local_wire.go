package node

import (
	"github.com/harn-dev/harn/node/alerts/notifysvc"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/coordsvc"
	"github.com/harn-dev/harn/node/declare"
	"github.com/harn-dev/harn/node/meshops"
	"github.com/harn-dev/harn/node/roster"
	"github.com/harn-dev/harn/node/tasksvc"
	"github.com/harn-dev/harn/node/trustadmin"
	"github.com/harn-dev/harn/node/upkeep"
	"github.com/harn-dev/harn/presence"
)

// localServer is the Local service: each room's part of it, and the
// node's own (service.go).
type localServer struct {
	*localService
	*tasksvc.TaskLocal
	*coordsvc.CoordLocal
	*notifysvc.NotifyLocal
	*trustadmin.TrustLocal
	*meshops.MeshLocal
	*declare.DeclareLocal
	*roster.RosterLocal
	*upkeep.HookLocal
}

var _ api.LocalServer = (*localServer)(nil)

// newLocalServer composes the rooms' parts of the Local service.
func newLocalServer(n *Node) *localServer {
	meshOf := func() meshops.Mesh {
		if n.cl == nil {
			return nil
		}
		return n.cl
	}
	return &localServer{
		localService: &localService{n: n},
		TaskLocal:    n.taskSvc.Local(),
		CoordLocal:   n.coord.Local(),
		NotifyLocal:  n.notes.Local(),
		TrustLocal:   n.trust.Local(),
		HookLocal: &upkeep.HookLocal{Keeper: n.keep, Ledger: n.ledger, Clock: n.cfg.Clock, Tie: n.hosts.Tie, Ingest: n.sess.Ingest,
			PeerContext: n.roster.PeerContext, Settle: n.seen.Settle, PendingName: n.sess.PendingName, DecideInAppend: n.taskSvc.DecideInAppend,
			ErrStatus: statusErr},
		RosterLocal: &roster.RosterLocal{Roster: n.roster, Node: n.cfg.Name, ErrStatus: statusErr,
			Waiter: roster.Waiter{Clock: n.cfg.Clock, Changes: n.alerts.Changes, Stop: n.stop, Closed: ErrClosed}},
		MeshLocal: &meshops.MeshLocal{Node: n.cfg.Name, Clock: n.cfg.Clock, Log: n.log, Mesh: meshOf,
			NoMesh: ErrNoMesh, ErrStatus: statusErr},
		DeclareLocal: &declare.DeclareLocal{Decl: n.decl, OwnerErr: n.roster.OwnerErr, ErrStatus: statusErr,
			Row: func(st presence.State) *api.SessionRow {
				row := api.RowOf(&st)
				row.Reachable, row.Source, row.HarnTask = true, "local", n.taskSvc.Brief(st.SessionID)
				return row
			}},
	}
}
