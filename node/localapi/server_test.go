package localapi

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
	"github.com/harn-dev/harn/node/api/apigrpc"
)

// serve runs s on a fresh unix socket until the test ends, and returns
// a client of it.
func serve(t *testing.T, tables ...map[string]api.Method) (*Server, *api.Client, string) {
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
	s := New(lis, tables...)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run()
	}()
	cl, _ := api.Dial(sock, 1<<20, nil)
	t.Cleanup(func() {
		cl.Close()
		s.Close()
		<-done
		os.RemoveAll(dir)
	})
	return s, cl, sock
}

// reached is a table with each method of tbl answering Unimplemented with
// its own full name: which handler a call reached.
func reached(tbl map[string]api.Method) map[string]api.Method {
	for name := range tbl {
		tbl[name] = func(context.Context, func(proto.Message) error) (proto.Message, error) {
			return nil, status.Error(codes.Unimplemented, "reached "+name)
		}
	}
	return tbl
}

// TestLocalClientHasEveryMethod: the client has a method for each method
// of the server's tables (both written from local.proto), and each one
// reaches the server's method of its own name.
func TestLocalClientHasEveryMethod(t *testing.T) {
	for _, c := range []struct {
		tbl    map[string]api.Method
		client func(*api.Client) any
	}{
		{api.LocalMethods(nil), func(cl *api.Client) any { return cl }},
		{api.MeshAdminMethods(nil), func(cl *api.Client) any { return cl.Admin }},
		{api.HostedMethods(nil), func(cl *api.Client) any { return cl.Hosted() }},
	} {
		tbl := reached(c.tbl)
		_, cl, _ := serve(t, tbl)
		impl := reflect.ValueOf(c.client(cl))
		if len(tbl) == 0 {
			t.Fatal("an empty table")
		}
		for name := range tbl {
			m := name[strings.LastIndex(name, "/")+1:]
			got := impl.MethodByName(m)
			if !got.IsValid() {
				t.Errorf("%s: the client has no %s", impl.Type(), m)
				continue
			}
			gt := got.Type()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			out := got.Call([]reflect.Value{reflect.ValueOf(ctx), reflect.New(gt.In(1).Elem())})
			cancel()
			err, _ := out[1].Interface().(error)
			if !errors.Is(err, api.ErrUnimplemented) || !strings.Contains(err.Error(), "reached "+name) {
				t.Errorf("%s: %v, want the handler of %s", m, err, name)
			}
		}
	}
}

type appendServer struct {
	api.LocalServer // nil: only Append is called
	seen            chan context.Context
}

func (s *appendServer) Append(ctx context.Context, in *api.AppendRequest) (*api.AppendResponse, error) {
	if in.ContextFor == "fail" {
		return nil, apigrpc.WithReasonMeta(codes.Unavailable, api.ReasonOwnerUnreachable, "the owner is gone", map[string]string{"k": "v"})
	}
	if in.ContextFor == "block" {
		s.seen <- ctx
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	return &api.AppendResponse{AdditionalContext: "ctx of " + in.ContextFor}, nil
}

// TestServerCarriesRepliesAndStatuses: a reply comes back whole, and a
// refusal as a *StatusError with its code, message, reason and metadata,
// which the sentinels match.
func TestServerCarriesRepliesAndStatuses(t *testing.T) {
	_, cl, _ := serve(t, api.LocalMethods(&appendServer{}))
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
	if !errors.Is(err, api.ErrOwnerUnreachable) || !errors.Is(err, api.ErrUnavailable) || apigrpc.Reason(err) != api.ReasonOwnerUnreachable {
		t.Fatalf("%v: sentinels do not match", err)
	}
	if st := apigrpc.Status(err); st.Code() != codes.Unavailable || apigrpc.Reason(st.Err()) != api.ReasonOwnerUnreachable {
		t.Fatalf("back to a status: %v", st)
	}
}

// TestServerEndsACallWhoseClientWent: a client that gives up (its
// context ends) closes its connection, and the node's handler sees its
// own context end: nobody waits for that reply.
func TestServerEndsACallWhoseClientWent(t *testing.T) {
	srv := &appendServer{seen: make(chan context.Context, 1)}
	_, cl, _ := serve(t, api.LocalMethods(srv))
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
	if err := <-errc; api.Code(err) != codes.Canceled || !errors.Is(err, context.Canceled) {
		t.Fatalf("the client's end: %v", err)
	}
	select {
	case <-hctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the handler's context did not end when its client went")
	}
}

// TestServerCloseEndsCallsInFlight: Close ends the context of a call in
// flight and waits for it.
func TestServerCloseEndsCallsInFlight(t *testing.T) {
	srv := &appendServer{seen: make(chan context.Context, 1)}
	w, cl, _ := serve(t, api.LocalMethods(srv))
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
	if err := <-errc; !errors.Is(err, api.ErrInternal) && api.Code(err) != codes.Canceled {
		t.Fatalf("the call's end: %v", err)
	}
}

// TestServerRefusesAnOversizeCall: a frame over MaxLocalCall is refused
// with ResourceExhausted before it is read, and the connection closed; an
// unknown method is Unimplemented.
func TestServerRefusesAnOversizeCall(t *testing.T) {
	_, _, sock := serve(t, api.LocalMethods(&appendServer{}))
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
