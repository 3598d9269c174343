package hostedsvc

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/apigrpc"
	"github.com/harn-dev/harn/node/cluster"
	"github.com/harn-dev/harn/node/hosted"
	"github.com/harn-dev/harn/node/operator"
	"github.com/harn-dev/harn/util/text"
)

// The HostedPeer service: another node's run, action, worktree list and
// attach, over the mutually authenticated cluster gRPC, under this
// node's --remote-control policy (and --remote-watch for an attach that
// only watches). Every refusal is logged here, at the target.

type hostedPeer struct {
	apigrpc.UnimplementedHostedPeerServer
	h *Host
}

// Peer is the HostedPeer service on the cluster gRPC.
func (h *Host) Peer() apigrpc.HostedPeerServer { return &hostedPeer{h: h} }

func (s *hostedPeer) Run(ctx context.Context, req *api.HostedRunRequest) (*api.HostedRunResponse, error) {
	h := s.h
	id, err := s.h.Gate.Authorize(ctx, "hosted run")
	if err != nil {
		return nil, Status(err)
	}
	r := cloneRun(req)
	r.By = operator.Remote(req.By, id)
	res, err := h.Start(r, true)
	if err != nil {
		s.h.Log.Warn("remote hosted run refused", "caller", id.String(), "agent", text.Clip(text.OneLine(req.Agent), 64), "err", err)
		return nil, err
	}
	s.h.Log.Info("remote hosted run", "by", r.By, "agent", text.Clip(text.OneLine(req.Agent), 64), "session", res.Session)
	return res, nil
}

func (s *hostedPeer) Act(ctx context.Context, req *api.HostedActRequest) (*api.HostedActResponse, error) {
	h := s.h
	id, err := s.h.Gate.Authorize(ctx, "hosted "+text.Clip(text.OneLine(req.Op), 16))
	if err != nil {
		return nil, Status(err)
	}
	return h.actHosted(req.Session, req.Op, req.Text, operator.Remote(req.By, id))
}

func (s *hostedPeer) Worktrees(ctx context.Context, req *api.WorktreesRequest) (*api.WorktreesResponse, error) {
	h := s.h
	if req.Remove != "" {
		id, err := s.h.Gate.Authorize(ctx, "worktree remove")
		if err != nil {
			return nil, Status(err)
		}
		r := &api.WorktreesRequest{Remove: req.Remove, Force: req.Force, By: operator.Remote(req.By, id)}
		return h.worktrees(r)
	}
	if _, _, err := s.h.Gate.AuthorizeAttach(ctx, "worktrees"); err != nil {
		return nil, Status(err)
	}
	return h.worktrees(&api.WorktreesRequest{})
}

func (s *hostedPeer) Screen(ctx context.Context, req *api.HostedScreenRequest) (*api.HostedScreenResponse, error) {
	h := s.h
	if _, _, err := s.h.Gate.AuthorizeAttach(ctx, "screen"); err != nil {
		return nil, Status(err)
	}
	return h.screenHosted(req.Session)
}

// Attach is a remote attach: the first frame names the session; the
// answer is the screen, then the terminal's bytes until its end.
func (s *hostedPeer) Attach(stream apigrpc.HostedPeer_AttachServer) error {
	h := s.h
	ctx := stream.Context()
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	open := first.GetOpen()
	if open == nil {
		return status.Error(codes.InvalidArgument, "attach: the first frame must open the attach")
	}
	id, watchOnly, err := s.h.Gate.AuthorizeAttach(ctx, "attach")
	if err != nil {
		return Status(err)
	}
	sub, screen, err := h.attachHosted(open.Session, open.ReadOnly || watchOnly, open.Rows, open.Cols, operator.Remote(open.By, id))
	if err != nil {
		return Status(err)
	}
	s.h.Log.Info("remote attach", "session", open.Session, "by", operator.Remote(open.By, id), "read_only", sub.ReadOnly())
	if err := stream.Send(&api.AttachFrame{Screen: screen, ReadOnly: sub.ReadOnly(), Session: open.Session}); err != nil {
		sub.Close()
		return err
	}
	pumpAttach(sub, func(f *api.AttachFrame) error { return stream.Send(f) }, stream.Recv, nil)
	return nil
}

// attachHosted attaches to a hosted session of this node.
func (h *Host) attachHosted(id string, readOnly bool, rows, cols uint32, by string) (*hosted.Sub, []byte, error) {
	if h == nil {
		return nil, nil, hosted.ErrClosed
	}
	if !h.room.Has(id) {
		return nil, nil, fmt.Errorf("%w: session %s on node %s is not a live hosted session (started with harn run)", errNotHosted, id, h.Node)
	}
	return h.room.Attach(id, readOnly, uint16(min(rows, 500)), uint16(min(cols, 1000)), by)
}

// hostedPeerOf is the HostedPeer client of a member.
func (h *Host) hostedPeerOf(node string) (apigrpc.HostedPeerClient, error) {
	m := h.Mesh()
	if m == nil {
		return nil, status.Error(codes.Unimplemented, fmt.Sprintf("hosted: --node %s needs the mesh on; this node runs alone", node))
	}
	cc, err := m.Conn(node)
	if errors.Is(err, cluster.ErrNotMember) {
		return nil, status.Error(codes.NotFound, fmt.Sprintf("hosted: %q is not a known mesh member", node))
	}
	if err != nil {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	return apigrpc.NewHostedPeerClient(cc), nil
}

// maxCoalesce bounds the output one data frame carries.
const maxCoalesce = 64 << 10

// pumpAttach moves an attach's bytes until it ends: the terminal's output
// to send, and what recv brings (typed bytes, sizes, a detach) to the
// terminal. It ends with an end frame saying why, and detaches. recv's
// goroutine ends when recv fails: with stopRecv set, pumpAttach calls it
// (closing the caller's connection) and waits for that goroutine; without
// (a gRPC stream, whose Recv ends when its handler returns) it does not.
func pumpAttach(sub *hosted.Sub, send func(*api.AttachFrame) error, recv func() (*api.AttachFrame, error), stopRecv func()) {
	gone := make(chan struct{})
	if stopRecv != nil {
		defer func() {
			stopRecv()
			<-gone
		}()
	}
	go func() {
		defer close(gone)
		for {
			f, err := recv()
			if err != nil {
				sub.Close()
				return
			}
			switch {
			case f.Detach:
				sub.Close()
				return
			case f.Size != nil:
				_ = sub.Resize(uint16(min(f.Size.Rows, 500)), uint16(min(f.Size.Cols, 1000)))
			case len(f.Data) > 0:
				if err := sub.Write(f.Data); err != nil && !errors.Is(err, hosted.ErrReadOnly) {
					sub.Close()
					return
				}
			}
		}
	}()
	for {
		select {
		case b := <-sub.Output():
			buf := append([]byte(nil), b...)
		more:
			for len(buf) < maxCoalesce {
				select {
				case b := <-sub.Output():
					buf = append(buf, b...)
				default:
					break more
				}
			}
			if err := send(&api.AttachFrame{Data: buf}); err != nil {
				sub.Close()
				return
			}
		case <-sub.Done():
			for {
				select {
				case b := <-sub.Output():
					if send(&api.AttachFrame{Data: b}) != nil {
						return
					}
					continue
				default:
				}
				break
			}
			_ = send(&api.AttachFrame{End: &api.AttachEnd{Reason: sub.Reason()}})
			return
		}
	}
}

// endOf is the end frame of an attach refused with err.
func endOf(err error) *api.AttachFrame {
	st := apigrpc.Status(Status(err))
	e := &api.AttachEnd{Reason: st.Message(), Code: uint32(st.Code())}
	if r := apigrpc.Reason(st.Err()); r != "" {
		e.ErrorReason = r
	}
	if e.Code == 0 {
		e.Code = uint32(codes.Unknown)
	}
	return &api.AttachFrame{End: e}
}
