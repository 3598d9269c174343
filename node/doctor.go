package node

import (
	"context"
	"time"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/meshops"
)

// diagWindow is how far back `harn doctor` counts hook diagnostics as
// current: an old bad payload stops being a finding after an hour (and
// `harn node errors --clear` clears them all).
const diagWindow = time.Hour

// Doctor reports this node's effective setup as `harn doctor` checks it:
// its config and bound addresses, TLS, gossip encryption, the registry's
// raft state (leader, voters, quorum, stale peer addresses) and the hook
// diagnostics of the last hour.
func (s *localService) Doctor(ctx context.Context, _ *api.DoctorRequest) (*api.DoctorResponse, error) {
	n := s.n
	out := &api.DoctorResponse{Node: n.cfg.Name, Role: "lone", DataDir: n.cfg.DataDir, Socket: n.cfg.Socket,
		Version: n.cfg.Version, Mesh: n.cfg.Cluster.Enabled, Tls: &api.DoctorTLS{Mode: "off"}}
	if a := n.web.ListenAddr(); a != "" {
		out.HttpAddr = a
	}
	if n.cfg.Cluster.Enabled {
		switch {
		case n.cfg.Cluster.Server:
			out.Role = "server"
		case n.cfg.Cluster.Replica:
			out.Role = "replica"
		case len(n.cfg.Cluster.Join) > 0:
			out.Role = "node"
		} // else a lone machine: its mesh has no one else
		out.GossipAddr, out.RaftAddr, out.RpcAddr = n.MeshAddr(), n.RaftAddr(), n.RPCAddr()
	}
	if n.cl != nil {
		out.Tls = n.cl.TLSView()
		out.GossipEncrypted = n.cl.GossipEncrypted()
		out.Raft = meshops.DoctorRaft(n.cl, n.cfg.Name)
	}
	if ds, err := n.ledger.Diagnostics(0); err == nil {
		out.DiagnosticsTotal = int32(len(ds))
		since := n.cfg.Clock.Now().Add(-diagWindow)
		for _, d := range ds {
			ts, err := time.Parse(time.RFC3339Nano, d.TS)
			if err != nil || ts.Before(since) {
				continue
			}
			out.DiagnosticsLastHour++
			if out.NewestDiagnostic == nil { // newest first
				out.NewestDiagnostic = wire.DiagnosticToAPI(d)
			}
		}
	}
	return out, nil
}
