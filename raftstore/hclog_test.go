package raftstore

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestJoinCatchUpIsNotAWarning: raft's "failed to get previous log", which
// every joining or lagging follower logs once while the leader backs off,
// reaches the node's log at Debug, not as a warning; other raft warnings
// stay warnings.
func TestJoinCatchUpIsNotAWarning(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	h := newHCLog(l, "raft")
	h.Warn("failed to get previous log", "previous-index", 7, "last-index", 0, "error", "log not found")
	if buf.Len() != 0 {
		t.Fatalf("a join's catch-up logged at warn: %s", buf.String())
	}
	h.Warn("heartbeat timeout reached, starting election")
	if !strings.Contains(buf.String(), "level=WARN") {
		t.Fatalf("another raft warning was lost: %q", buf.String())
	}
	buf.Reset()
	dl := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	newHCLog(dl, "raft").Warn("failed to get previous log", "previous-index", 7)
	if !strings.Contains(buf.String(), "level=DEBUG") {
		t.Fatalf("the catch-up message is not kept at debug: %q", buf.String())
	}
}
