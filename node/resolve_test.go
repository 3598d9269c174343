package node

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/util/clock"
)

func TestHandleIsIDPrefixOrNameWithOrWithoutAgent(t *testing.T) {
	cands := []candidate{{id: "01abc", name: "Flint"}, {id: "01abd", name: "Opal"}, {id: "02xyz", name: "Flint", ended: true}}
	for handle, want := range map[string]string{
		"01abc": "01abc", "02": "02xyz", "Flint": "01abc", "flint": "01abc",
		"Agent Flint": "01abc", "agent opal": "01abd", "  Agent  Opal ": "01abd",
	} {
		got, err := pickHandle(handle, cands)
		if err != nil || got != want {
			t.Errorf("%q: got %q %v, want %q", handle, got, err, want)
		}
	}
}

func TestAmbiguousHandleListsCandidates(t *testing.T) {
	cands := []candidate{{id: "01abc", name: "A"}, {id: "01abd", name: "B"}}
	_, err := pickHandle("01ab", cands)
	if !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), "01abc") || !strings.Contains(err.Error(), "01abd") {
		t.Fatalf("err %v", err)
	}
	_, err = pickHandle("nosuch", cands)
	if !errors.Is(err, ErrUnknownSession) {
		t.Fatalf("err %v", err)
	}
}

func TestShowAcceptsTheSessionName(t *testing.T) {
	n := openNode(t, testConfig(t, t.TempDir()))
	mustIngest(t, n, ev("sess-1", "1", "session.start", 1, nil))
	st, _ := n.Resolve("sess-1")
	for _, h := range []string{st.Name, strings.ToLower(st.Name), "Agent " + st.Name} {
		e, _, err := n.ReadSession(t.Context(), h)
		if err != nil || e.State.SessionID != "sess-1" {
			t.Errorf("%q: %v %v", h, e.State.SessionID, err)
		}
	}
}

type recordHandler struct{ recs []slog.Record }

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.recs = append(h.recs, r)
	return nil
}
func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordHandler) WithGroup(string) slog.Handler      { return h }

func TestRaftRepeatsAreRateLimited(t *testing.T) {
	clk := clock.NewFake(t0)
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
