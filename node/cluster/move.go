package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/meshtrust"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/raftstore"
)

// A server restarted on another raft port is still in the raft
// configuration at its old address, where its peers dial it in vain. At
// start it asks the leader to move it (raft's AddVoter with its ID and its
// new address), through a peer when it does not know the leader yet: the
// peers know the leader, this node may not (its old address is where the
// leader sends its heartbeats).

// moveEvery is the wait between a restarted server's attempts to move its
// raft address.
const moveEvery = time.Second

// maxRaftAddr bounds the address of a MoveServer request.
const maxRaftAddr = 261 // a host name of 255 bytes, a colon and a port

// moveLoop, on a server that restarted with raft state, moves this
// server's raft configuration entry to its advertised raft address until
// it is there (or the entry is gone: not this loop's business).
func (ms *membership) moveLoop() {
	c := ms.c
	if !c.cfg.Voter() {
		return
	}
	t := c.clock.NewTicker(moveEvery)
	defer t.Stop()
	for {
		done, err := ms.moveSelf()
		if done {
			return
		}
		if err != nil {
			c.log.Debug("move raft address", "addr", c.meta.RaftAddr, "err", err)
		}
		select {
		case <-c.stop:
			return
		case <-t.C():
		}
	}
}

// moveSelf makes one attempt; done says there is nothing (left) to do.
func (ms *membership) moveSelf() (done bool, err error) {
	c := ms.c
	servers, err := c.store.Servers()
	if err != nil {
		return false, err
	}
	old, ok := selfEntry(servers, c.name)
	if !ok || old == c.meta.RaftAddr || c.meta.RaftAddr == "" {
		return true, nil
	}
	ctx, cancel := c.stopContext(context.Background())
	defer cancel()
	if leader, _ := c.store.Leader(); leader != "" {
		err = c.moveServer(ctx, c.name, c.meta.RaftAddr)
	} else {
		err = ms.moveThroughPeer(ctx)
	}
	if err != nil {
		return false, err
	}
	c.log.Info("raft address moved", "from", old, "to", c.meta.RaftAddr)
	return true, nil
}

// selfEntry is the address of id in the raft configuration.
func selfEntry(servers []raftstore.Server, id string) (string, bool) {
	for _, s := range servers {
		if s.ID == id {
			return s.Addr, true
		}
	}
	return "", false
}

// moveThroughPeer asks each alive server of the mesh in turn to move this
// node; the first that takes it forwards it to the leader.
func (ms *membership) moveThroughPeer(ctx context.Context) error {
	c := ms.c
	errs := []error{ErrNoLeader}
	for _, m := range c.mesh.Members() {
		if m.Name == c.name || m.Status != mesh.StatusAlive || m.Meta.Role != mesh.RoleServer {
			continue
		}
		cl, err := c.ClientOf(m.Name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fctx, cancel := context.WithTimeout(ctx, c.cfg.ForwardTimeout)
		_, err = cl.MoveServer(fctx, &api.MoveServerRequest{Id: c.name, Addr: c.meta.RaftAddr})
		cancel()
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", m.Name, err))
	}
	return errors.Join(errs...)
}

// checkMove validates a MoveServer request: an id, and a host:port
// address of bounded size.
func checkMove(req *api.MoveServerRequest) error {
	if req.Id == "" || len(req.Id) > trust.MaxNameLen {
		return fmt.Errorf("%w: a server id of 1 to %d bytes", raftstore.ErrConfig, trust.MaxNameLen)
	}
	if len(req.Addr) > maxRaftAddr {
		return fmt.Errorf("%w: the address is over %d bytes", raftstore.ErrConfig, maxRaftAddr)
	}
	if _, _, err := net.SplitHostPort(req.Addr); err != nil {
		return fmt.Errorf("%w: address %q: %v", raftstore.ErrConfig, req.Addr, err)
	}
	return nil
}

// authorizeMove lets a node move its own raft configuration entry, and a
// server any entry (it forwards a restarted peer's move).
func authorizeMove(caller trust.Identity, id string) error {
	if caller.Name == id {
		return nil
	}
	return trust.CheckSessionWrite(caller, "", trust.WriteHousekeeping)
}

func (s *service) MoveServer(ctx context.Context, req *api.MoveServerRequest) (*api.MoveServerResponse, error) {
	if s.c.trust != nil {
		// A node may move itself; servers may move anyone (as with
		// RemoveServer: a server forwards a restarted peer's request).
		caller, err := trust.PeerFromContext(ctx)
		if err == nil {
			err = authorizeMove(caller, req.Id)
		}
		if err != nil {
			return nil, meshtrust.Refuse(s.c.log, "MoveServer", caller, err)
		}
	}
	if err := checkMove(req); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if err := s.c.moveServer(ctx, req.Id, req.Addr); err != nil {
		switch {
		case errors.Is(err, raftstore.ErrUnknownServer):
			return nil, status.Error(codes.NotFound, err.Error())
		case status.Code(err) != codes.Unknown:
			return nil, err // the leader's answer, forwarded as it is
		}
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	return &api.MoveServerResponse{}, nil
}
