package node

import (
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/claims"
)

// The coordination values on the wire (node/api): one function each way.

// CoordRequestOf is wire.CoordRequestOf.
func CoordRequestOf(op string, b CoordBody) *api.CoordRequest { return wire.CoordRequestOf(op, b) }

// coordBodyOf reads a Coord call's body.
func coordBodyOf(req *api.CoordRequest) CoordBody {
	return CoordBody{Session: req.GetSession(), Claims: claims.FromAPI(req.GetClaims()), All: req.GetAll(),
		Reason: req.GetReason(), By: req.GetBy()}
}

// CoordResultToAPI is r on the wire.
func CoordResultToAPI(r CoordResult) *api.CoordResult {
	return &api.CoordResult{Session: r.Session, Node: r.Node, Claims: claims.RegistryClaimsToAPI(r.Claims),
		Holders: claims.HoldersToAPI(r.Holders), Mode: r.Mode, Ended: r.Ended, Already: r.Already,
		Alive: r.Alive, Pid: int32(r.PID), Hosted: r.Hosted}
}

// CoordResultFromAPI is wire.CoordResultFromAPI.
func CoordResultFromAPI(r *api.CoordResult) CoordResult { return wire.CoordResultFromAPI(r) }
