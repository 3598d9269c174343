package localapi

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/harn-dev/harn/node/api/apigrpc"
)

// Trace wraps each call (Server.Wrap) in a server span named by its
// method (harn.v1.Local/Append), with its status code on an error.
func Trace(tr trace.Tracer) func(ctx context.Context, method string) (context.Context, func(error)) {
	return func(ctx context.Context, method string) (context.Context, func(error)) {
		name := strings.TrimPrefix(method, "/")
		svc, m, _ := strings.Cut(name, "/")
		ctx, span := tr.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("rpc.system", "harn-local"), attribute.String("rpc.service", svc), attribute.String("rpc.method", m)))
		return ctx, func(err error) {
			if err != nil {
				st := apigrpc.Status(err)
				span.SetStatus(otelcodes.Error, st.Message())
				span.SetAttributes(attribute.Int("rpc.grpc.status_code", int(st.Code())))
			}
			span.End()
		}
	}
}
