package e2e

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/grpc"
)

// otlpReceiver is a tiny OTLP gRPC collector: it keeps what it is sent.
type otlpReceiver struct {
	collectortrace.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []receivedSpan
}

// receivedSpan is what the tests read of one exported span.
type receivedSpan struct {
	service string
	name    string
	attrs   map[string]string
}

func (r *otlpReceiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				attrs := map[string]string{}
				for _, kv := range sp.Attributes {
					v := kv.GetValue()
					attrs[kv.Key] = v.GetStringValue()
					if _, isInt := v.GetValue().(*commonpb.AnyValue_IntValue); isInt {
						attrs[kv.Key] = fmt.Sprint(v.GetIntValue())
					}
				}
				r.spans = append(r.spans, receivedSpan{service: service, name: sp.Name, attrs: attrs})
			}
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func (r *otlpReceiver) snapshot() []receivedSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]receivedSpan(nil), r.spans...)
}

// startReceiver serves an otlpReceiver on a loopback port until the test
// ends.
func startReceiver(t *testing.T) (*otlpReceiver, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &otlpReceiver{}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, r)
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(lis) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	return r, lis.Addr().String()
}

// TestNodeSendsSpansToOTLPEndpoint: a real node started with
// --otlp-endpoint sends the spans of a real hook's ingest (the Append
// call, the ingest, the durable append and the fold) to an OTLP gRPC
// receiver.
func TestNodeSendsSpansToOTLPEndpoint(t *testing.T) {
	recv, addr := startReceiver(t)
	e := newEnv(t)
	// A short batch delay (the SDK's standard variable) so that spans
	// leave within the test's bound.
	environ := append(append([]string(nil), e.base...), "OTEL_BSP_SCHEDULE_DELAY=100")
	n := e.spawn(environ, "node", "--data-dir", e.dataDir, "--socket", e.socket, "--otlp-endpoint", addr)
	e.waitReady(n)
	const sid = "07e1-trace-0001"
	e.hook("claude-code", claudeStart(sid, t.TempDir()))

	want := []string{"harn.v1.Local/Append", "harn.ingest", "harn.ledger.append", "harn.fold"}
	eventually(t, stateTimeout, "the receiver gets the ingest's spans", func() (bool, string) {
		got := map[string]bool{}
		var names []string
		for _, s := range recv.snapshot() {
			if s.service != "harn-node" {
				return false, "a span from service " + s.service
			}
			if s.name == "harn.ingest" && (s.attrs["harn.session_id"] != sid || s.attrs["harn.events"] == "") {
				continue
			}
			got[s.name] = true
			names = append(names, s.name)
		}
		for _, w := range want {
			if !got[w] {
				return false, strings.Join(names, ", ")
			}
		}
		return true, ""
	})
}

// TestBadOTLPEndpointIsUsageError: a malformed --otlp-endpoint stops the
// node at once with a one-line usage error.
func TestBadOTLPEndpointIsUsageError(t *testing.T) {
	e := newEnv(t)
	r := e.harn("", "node", "--data-dir", e.dataDir, "--socket", e.socket, "--otlp-endpoint", "no-port-here")
	if r.code != 2 || !strings.Contains(r.stderr, "--otlp-endpoint") || !strings.Contains(r.stderr, "host:port") {
		t.Fatalf("%v", r)
	}
	oneLineErr(t, r)
}
