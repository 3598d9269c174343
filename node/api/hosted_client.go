package api

import (
	"context"
	"io"
	"net"

	"google.golang.org/protobuf/proto"

	"github.com/harn-dev/harn/node/api/hookwire"
)

// The hosting room's calls on the local wire (the Hosted service), and
// the attach stream's upgrade of the local socket.

// AttachPreface opens an attach on the local socket instead of the local
// wire: then the client sends AttachFrames (open first) and the node
// answers with AttachFrames (screen first), each framed as the local
// wire's (a 4-byte big-endian length, then the message).
const AttachPreface = "harn/a1\n"

// MaxAttachFrame bounds one frame of an attach, either way.
const MaxAttachFrame = 1 << 20

// ReasonHostedFull is the ErrorInfo reason of a start refused because
// the node hosts its --max-hosted sessions.
const ReasonHostedFull = "HOSTED_FULL"

// HostedClient is the client's Hosted service.
type HostedClient struct{ c *Client }

// Hosted is the client's Hosted service.
func (c *Client) Hosted() *HostedClient { return &HostedClient{c: c} }

// Invoke is the client's Invoke.
func (h *HostedClient) Invoke(ctx context.Context, method string, in, out proto.Message) error {
	return h.c.Invoke(ctx, method, in, out)
}

// OpenAttach upgrades conn (a fresh connection to the local socket) to an
// attach: the preface, then the open frame.
func OpenAttach(conn net.Conn, open *AttachOpen) error {
	if _, err := io.WriteString(conn, AttachPreface); err != nil {
		return err
	}
	return WriteFrame(conn, &AttachFrame{Open: open})
}

// ReadAttachFrame reads one frame of an attach.
func ReadAttachFrame(r io.Reader) (*AttachFrame, error) {
	f := new(AttachFrame)
	if err := ReadFrame(r, MaxAttachFrame, f); err != nil {
		return nil, err
	}
	return f, nil
}

// AttachError is the error of an attach's end frame that refused it (its
// code and reason as a call's status), nil for an end that is no refusal.
func AttachError(end *AttachEnd) error {
	if end == nil || end.Code == 0 {
		return nil
	}
	return hookwire.NewStatusError(hookwire.Code(end.Code), end.Reason, end.ErrorReason, nil)
}
