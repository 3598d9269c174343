package api

import (
	"context"
	"io"

	"google.golang.org/protobuf/proto"

	"github.com/harn-dev/harn/node/api/hookwire"
)

// WriteFrame writes m as one frame of the local wire (hookwire.Frame), in
// one write.
func WriteFrame(w io.Writer, m proto.Message) error {
	b, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	_, err = w.Write(hookwire.Frame(b))
	return err
}

// ReadFrame reads one frame of at most max bytes into m (hookwire.ReadFrame).
func ReadFrame(r io.Reader, max int, m proto.Message) error {
	b, err := hookwire.ReadFrame(r, max)
	if err != nil {
		return err
	}
	return proto.Unmarshal(b, m)
}

// Method is one method of the local wire on the node: it decodes its
// request with dec and answers. protoc-gen-harnlocal writes each
// service's table of them (LocalMethods, MeshAdminMethods, HostedMethods
// in local.harn.go), which node/localapi serves.
type Method func(ctx context.Context, dec func(proto.Message) error) (proto.Message, error)
