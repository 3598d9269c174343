package tracing

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
)

// TestEndpointForms: host:port and http(s) URLs are taken; anything else
// is ErrEndpoint.
func TestEndpointForms(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"127.0.0.1:4317", true},
		{"collector.internal:4317", true},
		{"[::1]:4317", true},
		{"http://127.0.0.1:4317", true},
		{"https://otel.example:4317", true},
		{"127.0.0.1", false},
		{":4317", false},
		{"localhost:", false},
		{"grpc://127.0.0.1:4317", false},
		{"https://", false},
		{"", false},
	} {
		err := CheckEndpoint(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("%q: %v", tc.in, err)
		}
		if err != nil && !errors.Is(err, ErrEndpoint) {
			t.Errorf("%q: %v is not ErrEndpoint", tc.in, err)
		}
	}
}

// TestOffWithoutEndpoint: no endpoint, no provider, a no-op tracer and no
// gRPC options.
func TestOffWithoutEndpoint(t *testing.T) {
	tp, err := Open(context.Background(), Config{})
	if tp != nil || err != nil {
		t.Fatalf("Open without an endpoint: %v, %v", tp, err)
	}
	if _, sp := Tracer(nil).Start(context.Background(), "x"); sp.IsRecording() {
		t.Error("the off tracer records")
	}
	if ServerOptions(nil) != nil || DialOptions(nil) != nil {
		t.Error("gRPC options while off")
	}
}

// TestOpenDoesNotWaitForTheCollector: Open with an endpoint where nothing
// listens returns a provider at once; its shutdown is bounded by its
// context.
func TestOpenDoesNotWaitForTheCollector(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // nothing listens there now
	tp, err := Open(context.Background(), Config{Endpoint: addr, Node: "n1"})
	if err != nil || tp == nil {
		t.Fatalf("Open: %v, %v", tp, err)
	}
	_, sp := Tracer(tp).Start(context.Background(), "x")
	if !sp.IsRecording() {
		t.Error("the tracer does not record while on")
	}
	sp.End()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = tp.Shutdown(ctx) // must return: its context is done
}

// FuzzCheckEndpoint: any text is judged without a panic, and an accepted
// bare endpoint has a host and a port.
func FuzzCheckEndpoint(f *testing.F) {
	for _, s := range []string{"127.0.0.1:4317", "https://h:1", "http://", "[::1]:x", "::::", "\x00:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if CheckEndpoint(s) != nil || strings.Contains(s, "://") {
			return
		}
		if h, p, err := net.SplitHostPort(s); err != nil || h == "" || p == "" {
			t.Fatalf("%q accepted without host and port", s)
		}
	})
}
