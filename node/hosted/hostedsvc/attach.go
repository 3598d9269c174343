package hostedsvc

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/hosted"
	"github.com/harn-dev/harn/node/operator"
)

// The attach stream on the local socket: a connection that opens with
// api.AttachPreface (instead of the local wire's) carries AttachFrames
// both ways, in the local wire's framing. The node serves an attach to
// its own hosted session from the room, and relays one to another node's
// over that node's HostedPeer.Attach (a gRPC stream on the mutually
// authenticated cluster channel).

const (
	// attachOpenWait bounds the wait for the open frame.
	attachOpenWait = 10 * time.Second
	// attachWriteWait bounds one frame's write to the client: a client
	// that reads nothing is dropped, never the agent slowed.
	attachWriteWait = 10 * time.Second
)

// ServeAttach serves one attach connection; it closes conn.
func (h *Host) ServeAttach(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	var wmu sync.Mutex
	send := func(f *api.AttachFrame) error {
		wmu.Lock()
		defer wmu.Unlock()
		conn.SetWriteDeadline(time.Now().Add(attachWriteWait)) //clock:real a socket's deadline is wall time
		return api.WriteFrame(conn, f)
	}
	recv := func() (*api.AttachFrame, error) { return api.ReadAttachFrame(conn) }
	conn.SetReadDeadline(time.Now().Add(attachOpenWait)) //clock:real a socket's deadline is wall time
	first, err := recv()
	conn.SetReadDeadline(time.Time{})
	if err != nil {
		return
	}
	open := first.GetOpen()
	if open == nil {
		send(endOf(fmt.Errorf("%w: the first frame must open the attach", hosted.ErrBadStart)))
		return
	}
	by := operator.By(ctx, h.Node, "")
	id, target, err := h.Place(open.Session)
	if err != nil {
		send(endOf(err))
		return
	}
	if target != h.Node {
		h.relayAttach(ctx, target, &api.AttachOpen{Session: id, Rows: open.Rows, Cols: open.Cols, ReadOnly: open.ReadOnly,
			By: operator.Part(by)}, send, recv, conn)
		return
	}
	sub, screen, err := h.attachHosted(id, open.ReadOnly, open.Rows, open.Cols, by)
	if err != nil {
		send(endOf(err))
		return
	}
	if err := send(&api.AttachFrame{Screen: screen, ReadOnly: sub.ReadOnly(), Session: id}); err != nil {
		sub.Close()
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		pumpAttach(sub, send, recv, func() { conn.Close() })
	}()
	select {
	case <-done:
	case <-h.Stop:
		sub.Close()
		<-done
	}
	conn.Close() // ends pumpAttach's reader
}

// relayAttach carries an attach between the local client and target's
// HostedPeer.Attach.
func (h *Host) relayAttach(ctx context.Context, target string, open *api.AttachOpen,
	send func(*api.AttachFrame) error, recv func() (*api.AttachFrame, error), conn net.Conn) {
	cl, err := h.hostedPeerOf(target)
	if err != nil {
		send(endOf(err))
		return
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { // ends with sctx
		select {
		case <-h.Stop:
			cancel()
		case <-sctx.Done():
		}
	}()
	st, err := cl.Attach(sctx)
	if err != nil {
		send(endOf(err))
		return
	}
	if err := st.Send(&api.AttachFrame{Open: open}); err != nil {
		send(endOf(err))
		return
	}
	up := make(chan struct{})
	go func() { // the client's frames to the owner
		defer close(up)
		for {
			f, err := recv()
			if err != nil {
				cancel()
				return
			}
			if err := st.Send(f); err != nil {
				return
			}
			if f.Detach {
				st.CloseSend()
				return
			}
		}
	}()
	for {
		f, err := st.Recv()
		if err != nil {
			if sctx.Err() == nil {
				send(endOf(err))
			}
			break
		}
		if send(f) != nil || f.End != nil {
			break
		}
	}
	cancel()
	conn.Close() // ends the reader above
	<-up
}
