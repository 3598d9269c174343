package main

import (
	"context"
	"fmt"
	"time"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node"
	"github.com/harn-dev/harn/node/tracing"
	"github.com/spf13/cobra"
)

// tracingFlushBound bounds the last export of spans when the node stops.
const tracingFlushBound = 2 * time.Second

// openTracing turns tracing on for `harn node --otlp-endpoint`: it sets
// cfg.TracerProvider and returns the stop that flushes the last spans
// (bounded). Without the flag it does nothing. Only the node traces: hooks
// and other commands never open an exporter.
func openTracing(c *cobra.Command, cfg *node.Config) (func(), error) {
	endpoint, _ := c.Flags().GetString("otlp-endpoint")
	if endpoint == "" {
		return func() {}, nil
	}
	if err := tracing.CheckEndpoint(endpoint); err != nil {
		return nil, hook.UsageErr(fmt.Errorf("--otlp-endpoint: %w", err))
	}
	tp, err := tracing.Open(c.Context(), tracing.Config{Endpoint: endpoint, Service: "harn-node", Version: hook.Version(), Node: cfg.Name})
	if err != nil {
		return nil, err
	}
	cfg.TracerProvider = tp
	cfg.LogPrompts, _ = c.Flags().GetBool("otel-log-prompts")
	cfg.Logger.Info("tracing on", "otlp_endpoint", endpoint, "log_prompts", cfg.LogPrompts)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), tracingFlushBound)
		defer cancel()
		if err := tp.Shutdown(ctx); err != nil {
			cfg.Logger.Warn("tracing flush", "err", err)
		}
	}, nil
}
