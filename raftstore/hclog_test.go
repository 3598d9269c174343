package raftstore

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestJoinCatchUpIsNotAWarning: raft's "failed to get previous log", which
// every joining or lagging follower logs once while the leader backs off,
// and the leader's "appendEntries rejected, sending older logs", reach the
// node's log at Debug, not as warnings; other raft warnings stay warnings.
func TestJoinCatchUpIsNotAWarning(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	h := newHCLog(l, "raft")
	h.Warn("failed to get previous log", "previous-index", 7, "last-index", 0, "error", "log not found")
	h.Warn("appendEntries rejected, sending older logs", "peer", "nodeB", "next", 1)
	if buf.Len() != 0 {
		t.Fatalf("a join's catch-up logged at warn: %s", buf.String())
	}
	h.Warn("heartbeat timeout reached, starting election", "last-leader-addr", "10.0.0.2:7711", "last-leader-id", "b")
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

// TestFirstElectionIsNotAWarning: raft's "heartbeat timeout reached,
// starting election" with no last leader (a server that has heard from no
// leader since it started: a lone node's clean start, a restart, servers
// coming up together) reaches the log at Info; with a last leader (one
// that went silent) it stays a warning.
func TestFirstElectionIsNotAWarning(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	h := newHCLog(l, "raft")
	h.Warn("heartbeat timeout reached, starting election", "last-leader-addr", "", "last-leader-id", "")
	if !strings.Contains(buf.String(), "level=INFO") || strings.Contains(buf.String(), "level=WARN") {
		t.Fatalf("a first election logged as %q, want INFO", buf.String())
	}
	buf.Reset()
	h.With("last-leader-id", "").Warn("heartbeat timeout reached, starting election")
	if !strings.Contains(buf.String(), "level=INFO") {
		t.Fatalf("a first election with implied args logged as %q, want INFO", buf.String())
	}
	buf.Reset()
	h.Warn("heartbeat timeout reached, starting election", "last-leader-addr", "127.0.0.1:7711", "last-leader-id", "a")
	if !strings.Contains(buf.String(), "level=WARN") {
		t.Fatalf("a lost leader logged as %q, want WARN", buf.String())
	}
}
