package node

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/tracing"
)

// memTracing is a tracer provider that records every ended span in
// memory, at once.
func memTracing() (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	return tracing.NewProvider(tracing.Config{Node: "testnode"}, sdktrace.WithSyncer(exp)), exp
}

// spansOnceEnded waits (bounded) until spans with each name have ended:
// a server span ends after its reply is sent, so just after the call.
func spansOnceEnded(t *testing.T, exp *tracetest.InMemoryExporter, names ...string) tracetest.SpanStubs {
	t.Helper()
	var spans tracetest.SpanStubs
	waitFor(t, 10*time.Second, fmt.Sprintf("spans %v", names), func() bool {
		spans = exp.GetSpans()
		for _, name := range names {
			n := 0
			for _, s := range spans {
				if s.Name == name {
					n++
				}
			}
			if n == 0 {
				return false
			}
		}
		return true
	})
	return spans
}

// spanNamed is the one ended span called name.
func spanNamed(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		var names []string
		for _, s := range spans {
			names = append(names, s.Name)
		}
		t.Fatalf("%d spans named %q among %v", len(found), name, names)
	}
	return found[0]
}

// TestIngestSpansUnderTheAppendCall: with tracing on, an Append over the
// local socket makes a gRPC server span, an ingest span under it, and the
// durable append and the fold under the ingest span.
func TestIngestSpansUnderTheAppendCall(t *testing.T) {
	tp, exp := memTracing()
	cfg := testConfig(t, t.TempDir())
	cfg.TracerProvider = tp
	openNode(t, cfg)

	cl := dialClient(t, cfg.Socket)
	e := ev("s-traced", "01JTRACE0000000000000000001", "session.start", 1, map[string]any{"cwd": "/tmp"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cl.Append(ctx, &api.AppendRequest{Events: []*api.Event{wire.EventToAPI(&e)}}); err != nil {
		t.Fatal(err)
	}
	spans := spansOnceEnded(t, exp, "harn.v1.Local/Append", spanIngest, spanAppend, spanFold)
	call := spanNamed(t, spans, "harn.v1.Local/Append")
	ingest := spanNamed(t, spans, spanIngest)
	if call.SpanKind != trace.SpanKindServer {
		t.Errorf("the Append span is %v, not a server span", call.SpanKind)
	}
	if ingest.Parent.SpanID() != call.SpanContext.SpanID() || ingest.SpanContext.TraceID() != call.SpanContext.TraceID() {
		t.Errorf("the ingest span is not under the Append call")
	}
	for _, name := range []string{spanAppend, spanFold} {
		if s := spanNamed(t, spans, name); s.Parent.SpanID() != ingest.SpanContext.SpanID() {
			t.Errorf("%s is not under the ingest span", name)
		}
	}
	attrs := map[string]string{}
	for _, kv := range ingest.Attributes {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	if attrs["harn.session_id"] != "s-traced" || attrs["harn.events"] != "1" || attrs["harn.event_type"] != "session.start" {
		t.Errorf("ingest span attributes: %v", attrs)
	}
}

// TestTracingOffIsANoOp: without a tracer provider the node's spans do
// not record, and no gRPC stats handler is installed.
func TestTracingOffIsANoOp(t *testing.T) {
	n := openNode(t, testConfig(t, t.TempDir()))
	mustIngest(t, n, ev("s-plain", "01JTRACE0000000000000000002", "session.start", 1, nil))
	if _, sp := n.tracer.Start(context.Background(), spanIngest); sp.IsRecording() {
		t.Error("a span records with tracing off")
	}
	if len(tracing.ServerOptions(nil)) != 0 || len(tracing.DialOptions(nil)) != 0 {
		t.Error("gRPC tracing options with tracing off")
	}
}

// TestClusterCallsTracedAcrossNodes: with tracing on, a call to a peer's
// cluster service makes a client span and, in the same trace, the server
// span under it (the trace context crosses the call).
func TestClusterCallsTracedAcrossNodes(t *testing.T) {
	tp, exp := memTracing()
	cfg, sockDir := cbConfig(t, t.TempDir(), 0, 1, "")
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	cfg.Cluster.RaftProfile = "fast"
	cfg.TracerProvider = tp
	n := openNode(t, cfg)

	cl, err := n.cl.ClientOf(cfg.Name)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cl.Presence(ctx, &api.PresenceRequest{}); err != nil {
		t.Fatal(err)
	}
	var client, server *tracetest.SpanStub
	waitFor(t, 10*time.Second, "both spans of the call", func() bool {
		n := 0
		for _, s := range exp.GetSpans() {
			if s.Name == "harn.v1.Cluster/Presence" {
				n++
			}
		}
		return n >= 2
	})
	for _, s := range exp.GetSpans() {
		if s.Name != "harn.v1.Cluster/Presence" {
			continue
		}
		switch s.SpanKind {
		case trace.SpanKindClient:
			client = &s
		case trace.SpanKindServer:
			server = &s
		}
	}
	if client == nil || server == nil {
		t.Fatalf("client span %v, server span %v", client != nil, server != nil)
	}
	if server.SpanContext.TraceID() != client.SpanContext.TraceID() || server.Parent.SpanID() != client.SpanContext.SpanID() {
		t.Error("the server span is not under the client span: the trace context did not cross the call")
	}
}
