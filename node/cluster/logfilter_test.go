package cluster

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/harn-dev/harn/util/clock"
)

type recordHandler struct{ recs []slog.Record }

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.recs = append(h.recs, r)
	return nil
}
func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordHandler) WithGroup(string) slog.Handler      { return h }

func TestRaftRepeatsAreRateLimited(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rec := &recordHandler{}
	log := slog.New(newRepeatFilter(rec, clk, 10*time.Second))
	for range 5 {
		log.Error("failed to contact", "peer", "n2")
	}
	log.Info("elected") // lower levels pass
	clk.Advance(10 * time.Second)
	log.Error("failed to contact", "peer", "n2")
	if len(rec.recs) != 3 {
		t.Fatalf("%d records passed, want 3", len(rec.recs))
	}
	last := rec.recs[2]
	n := int64(0)
	last.Attrs(func(a slog.Attr) bool {
		if a.Key == "suppressed_repeats" {
			n = a.Value.Int64()
		}
		return true
	})
	if n != 4 {
		t.Fatalf("suppressed_repeats %d, want 4", n)
	}
}
