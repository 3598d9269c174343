package apigrpc

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/hookwire"
)

// wireServer serves w on a fresh unix socket until the test ends, and
// returns a client of it.
func wireServer(t *testing.T, w *LocalWire) (*api.Client, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "lw")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Serve(lis)
	}()
	cl, _ := api.Dial(sock, 1<<20, nil)
	t.Cleanup(func() {
		cl.Close()
		lis.Close()
		<-done
		w.Close()
		os.RemoveAll(dir)
	})
	return cl, sock
}

// TestLocalClientHasEveryMethod: the local wire's client has each unary
// method of the generated gRPC clients, with the same request and reply,
// and calls it by the method's own name (a misnamed call would meet
// "unknown method", not the handler's Unimplemented).
func TestLocalClientHasEveryMethod(t *testing.T) {
	cl, _ := wireServer(t, NewLocalWire(Service{&Local_ServiceDesc, UnimplementedLocalServer{}},
		Service{&MeshAdmin_ServiceDesc, UnimplementedMeshAdminServer{}}))
	for _, c := range []struct {
		iface reflect.Type
		impl  reflect.Value
	}{
		{reflect.TypeFor[LocalClient](), reflect.ValueOf(cl)},
		{reflect.TypeFor[MeshAdminClient](), reflect.ValueOf(cl.Admin)},
	} {
		for i := range c.iface.NumMethod() {
			want := c.iface.Method(i)
			got := c.impl.MethodByName(want.Name)
			if !got.IsValid() {
				t.Errorf("%s: the local client has no %s", c.iface.Name(), want.Name)
				continue
			}
			gt := got.Type()
			if gt.NumIn() != 2 || gt.In(1) != want.Type.In(1) || gt.Out(0) != want.Type.Out(0) {
				t.Errorf("%s.%s: %v, want the request and reply of %v", c.iface.Name(), want.Name, gt, want.Type)
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			out := got.Call([]reflect.Value{reflect.ValueOf(ctx), reflect.New(gt.In(1).Elem())})
			cancel()
			err, _ := out[1].Interface().(error)
			if !errors.Is(err, api.ErrUnimplemented) || !strings.Contains(err.Error(), "method "+want.Name+" not implemented") {
				t.Errorf("%s.%s: %v, want the handler's Unimplemented", c.iface.Name(), want.Name, err)
			}
		}
	}
}

type appendServer struct {
	UnimplementedLocalServer
	seen chan context.Context
}

func (s *appendServer) Append(ctx context.Context, in *api.AppendRequest) (*api.AppendResponse, error) {
	if in.ContextFor == "fail" {
		return nil, WithReasonMeta(codes.Unavailable, api.ReasonOwnerUnreachable, "the owner is gone", map[string]string{"k": "v"})
	}
	if in.ContextFor == "block" {
		s.seen <- ctx
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	return &api.AppendResponse{AdditionalContext: "ctx of " + in.ContextFor}, nil
}

// TestLocalWireCarriesRepliesAndStatuses: a reply comes back whole, and a
// refusal as a *StatusError with its code, message, reason and metadata,
// which the sentinels match.
func TestLocalWireCarriesRepliesAndStatuses(t *testing.T) {
	cl, _ := wireServer(t, NewLocalWire(Service{&Local_ServiceDesc, &appendServer{}}))
	ctx := context.Background()
	for range 3 { // the connection is kept and reused
		r, err := cl.Append(ctx, &api.AppendRequest{ContextFor: "s1"})
		if err != nil || r.AdditionalContext != "ctx of s1" {
			t.Fatalf("append: %v %v", r, err)
		}
	}
	_, err := cl.Append(ctx, &api.AppendRequest{ContextFor: "fail"})
	var se *api.StatusError
	if !errors.As(err, &se) || codes.Code(se.Code()) != codes.Unavailable || se.Message() != "the owner is gone" || se.Meta["k"] != "v" {
		t.Fatalf("refusal: %#v", err)
	}
	if !errors.Is(err, api.ErrOwnerUnreachable) || !errors.Is(err, api.ErrUnavailable) || Reason(err) != api.ReasonOwnerUnreachable {
		t.Fatalf("%v: sentinels do not match", err)
	}
	if st := Status(err); st.Code() != codes.Unavailable || Reason(st.Err()) != api.ReasonOwnerUnreachable {
		t.Fatalf("back to a status: %v", st)
	}
}

// TestLocalWireEndsACallWhoseClientWent: a client that gives up (its
// context ends) closes its connection, and the node's handler sees its
// own context end: nobody waits for that reply.
func TestLocalWireEndsACallWhoseClientWent(t *testing.T) {
	srv := &appendServer{seen: make(chan context.Context, 1)}
	cl, _ := wireServer(t, NewLocalWire(Service{&Local_ServiceDesc, srv}))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cl.Append(ctx, &api.AppendRequest{ContextFor: "block"})
		errc <- err
	}()
	var hctx context.Context
	select {
	case hctx = <-srv.seen:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler never ran")
	}
	cancel()
	if err := <-errc; api.Code(err) != hookwire.Canceled || !errors.Is(err, context.Canceled) {
		t.Fatalf("the client's end: %v", err)
	}
	select {
	case <-hctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the handler's context did not end when its client went")
	}
}

// TestLocalWireCloseEndsCallsInFlight: Close ends the context of a call in
// flight and waits for it.
func TestLocalWireCloseEndsCallsInFlight(t *testing.T) {
	srv := &appendServer{seen: make(chan context.Context, 1)}
	w := NewLocalWire(Service{&Local_ServiceDesc, srv})
	cl, _ := wireServer(t, w)
	errc := make(chan error, 1)
	go func() {
		_, err := cl.Append(context.Background(), &api.AppendRequest{ContextFor: "block"})
		errc <- err
	}()
	select {
	case <-srv.seen:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler never ran")
	}
	closed := make(chan struct{})
	go func() { w.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the call in flight")
	}
	if err := <-errc; !errors.Is(err, api.ErrInternal) && api.Code(err) != hookwire.Canceled {
		t.Fatalf("the call's end: %v", err)
	}
}

// TestLocalWireRefusesAnOversizeCall: a frame over MaxLocalCall is refused
// with ResourceExhausted before it is read, and the connection closed; an
// unknown method is Unimplemented.
func TestLocalWireRefusesAnOversizeCall(t *testing.T) {
	_, sock := wireServer(t, NewLocalWire(Service{&Local_ServiceDesc, &appendServer{}}))
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var h [4]byte
	binary.BigEndian.PutUint32(h[:], api.MaxLocalCall+1)
	io.WriteString(c, api.LocalPreface)
	c.Write(h[:])
	var r api.LocalReply
	if err := api.ReadFrame(c, 1<<20, &r); err != nil || codes.Code(r.Code) != codes.ResourceExhausted {
		t.Fatalf("oversize: %v %v", &r, err)
	}
	if _, err := c.Read(h[:]); err != io.EOF {
		t.Fatalf("the connection stays open: %v", err)
	}

	c2, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c2, api.LocalPreface)
	api.WriteFrame(c2, &api.LocalCall{Method: "/harn.v1.Local/Nope\x1b[2J"})
	if err := api.ReadFrame(c2, 1<<20, &r); err != nil || codes.Code(r.Code) != codes.Unimplemented {
		t.Fatalf("unknown method: %v %v", &r, err)
	}
}

// FuzzReadFrame: any bytes on the socket read as a call or an error, never
// a panic or a read past the bound.
func FuzzReadFrame(f *testing.F) {
	b, _ := proto.Marshal(&api.LocalCall{Method: "/harn.v1.Local/Append", Body: []byte{1, 2}, TimeoutMs: 5})
	var h [4]byte
	binary.BigEndian.PutUint32(h[:], uint32(len(b)))
	f.Add(append(h[:], b...))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 0, 3, 0x0a, 0x05})
	f.Fuzz(func(t *testing.T, in []byte) {
		var call api.LocalCall
		r := &countingReader{r: strings.NewReader(string(in))}
		_ = api.ReadFrame(r, 1<<10, &call)
		if r.n > 4+1<<10 {
			t.Fatalf("read %d bytes, over the bound", r.n)
		}
	})
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += n
	return n, err
}
