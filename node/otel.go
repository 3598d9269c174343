package node

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/harn-dev/harn/presence"
)

// Span names of ingest (see node/tracing): the whole ingest, and its two
// steps, the durable append and the fold into the live states.
const (
	spanIngest = "harn.ingest"
	spanAppend = "harn.ledger.append"
	spanFold   = "harn.fold"
)

// startIngestSpan opens the span of one ingest under ctx's span (the gRPC
// call's, when tracing is on). The attributes are counts and the one
// session's id, agent and event type; never attribute values.
func (n *Node) startIngestSpan(ctx context.Context, evs []presence.Event) (context.Context, trace.Span) {
	ctx, sp := n.tracer.Start(ctx, spanIngest)
	if !sp.IsRecording() {
		return ctx, sp
	}
	sp.SetAttributes(attribute.Int("harn.events", len(evs)))
	if len(evs) > 0 {
		sp.SetAttributes(attribute.String("harn.session_id", evs[0].SessionID),
			attribute.String("harn.agent", evs[0].Agent), attribute.String("harn.event_type", evs[0].Type))
	}
	return ctx, sp
}

// endSpan ends sp, marking it failed when err is set.
func endSpan(sp trace.Span, err error) {
	if err != nil {
		sp.RecordError(err)
		sp.SetStatus(codes.Error, err.Error())
	}
	sp.End()
}
