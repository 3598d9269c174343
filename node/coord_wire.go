package node

import (
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/claims"
)

// The coordination values on the wire (node/api): one function each way.

// CoordRequestOf is the Coord call of op with body b.
func CoordRequestOf(op string, b CoordBody) *api.CoordRequest {
	return &api.CoordRequest{Op: op, Session: b.Session, Claims: claims.ToAPI(b.Claims), All: b.All,
		Reason: b.Reason, By: b.By}
}

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

// CoordResultFromAPI reads a coordination result from the wire.
func CoordResultFromAPI(r *api.CoordResult) CoordResult {
	return CoordResult{Session: r.GetSession(), Node: r.GetNode(), Claims: claims.RegistryClaimsFromAPI(r.GetClaims()),
		Holders: claims.HoldersFromAPI(r.GetHolders()), Mode: r.GetMode(), Ended: r.GetEnded(),
		Already: r.GetAlready(), Alive: r.GetAlive(), PID: int(r.GetPid()), Hosted: r.GetHosted()}
}
