// Package tracing is the node's optional OpenTelemetry tracing: it opens
// a tracer provider that exports spans to an OTLP gRPC collector, and
// gives the gRPC server and client options (otelgrpc stats handlers) that
// trace the local and cluster calls. Off, it costs nothing beyond a no-op
// tracer: no exporter, no stats handler. The node opens spans of its own
// (ingest) with the tracer from Tracer.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc"
)

// ErrEndpoint: the OTLP endpoint is not host:port nor an http(s) URL.
var ErrEndpoint = errors.New("tracing: bad OTLP endpoint")

// InstrumentationName names the tracer of the node's own spans.
const InstrumentationName = "github.com/harn-dev/harn/node"

// Config says where spans go and how this process is named in them.
type Config struct {
	// Endpoint is the OTLP gRPC collector: host:port (plaintext), or
	// http://host:port (plaintext) or https://host:port (TLS). Empty turns
	// tracing off.
	Endpoint string
	// Service is the service.name resource attribute.
	Service string
	// Version is service.version; Node is service.instance.id.
	Version, Node string
}

// CheckEndpoint says whether e is an endpoint Open takes.
func CheckEndpoint(e string) error {
	if strings.Contains(e, "://") {
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%w: %q: give host:port, http://host:port or https://host:port", ErrEndpoint, e)
		}
		return nil
	}
	host, port, err := net.SplitHostPort(e)
	if err != nil || host == "" || port == "" {
		return fmt.Errorf("%w: %q: give host:port, http://host:port or https://host:port", ErrEndpoint, e)
	}
	return nil
}

// Open builds a tracer provider that batches spans to cfg.Endpoint. It
// does not wait for the collector: spans made while it cannot be reached
// are dropped by the exporter after its retries. With no endpoint it
// returns nil, nil: tracing is off. The caller shuts the provider down
// (bounded by the context it gives Shutdown) after the node has closed.
func Open(ctx context.Context, cfg Config) (*sdktrace.TracerProvider, error) {
	if cfg.Endpoint == "" {
		return nil, nil
	}
	if err := CheckEndpoint(cfg.Endpoint); err != nil {
		return nil, err
	}
	opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(cfg.Endpoint), otlptracegrpc.WithInsecure()}
	if strings.Contains(cfg.Endpoint, "://") {
		opts = []otlptracegrpc.Option{otlptracegrpc.WithEndpointURL(cfg.Endpoint)}
	}
	exp, err := otlptracegrpc.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter for %s: %w", cfg.Endpoint, err)
	}
	return NewProvider(cfg, sdktrace.WithBatcher(exp)), nil
}

// NewProvider builds a tracer provider with this process's resource and
// the given span processors (tests pass a syncer over an in-memory
// exporter).
func NewProvider(cfg Config, opts ...sdktrace.TracerProviderOption) *sdktrace.TracerProvider {
	service := cfg.Service
	if service == "" {
		service = "harn-node"
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", service)}
	if cfg.Version != "" {
		attrs = append(attrs, attribute.String("service.version", cfg.Version))
	}
	if cfg.Node != "" {
		attrs = append(attrs, attribute.String("service.instance.id", cfg.Node))
	}
	opts = append([]sdktrace.TracerProviderOption{sdktrace.WithResource(sdkresource.NewSchemaless(attrs...))}, opts...)
	return sdktrace.NewTracerProvider(opts...)
}

// Tracer is the tracer of the node's own spans: tp's, or a no-op one when
// tp is nil.
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return noop.NewTracerProvider().Tracer(InstrumentationName)
	}
	return tp.Tracer(InstrumentationName)
}

// propagator carries the trace context across gRPC calls between nodes.
var propagator = propagation.TraceContext{}

// ServerOptions are the gRPC server options that trace each call: none
// when tp is nil.
func ServerOptions(tp trace.TracerProvider) []grpc.ServerOption {
	if tp == nil {
		return nil
	}
	return []grpc.ServerOption{grpc.StatsHandler(otelgrpc.NewServerHandler(
		otelgrpc.WithTracerProvider(tp), otelgrpc.WithPropagators(propagator)))}
}

// DialOptions are the gRPC client options that trace each call and pass
// its context to the server: none when tp is nil.
func DialOptions(tp trace.TracerProvider) []grpc.DialOption {
	if tp == nil {
		return nil
	}
	return []grpc.DialOption{grpc.WithStatsHandler(otelgrpc.NewClientHandler(
		otelgrpc.WithTracerProvider(tp), otelgrpc.WithPropagators(propagator)))}
}
