package raftstore

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
)

// Log keys of this package. Keys are constants; values vary.
const (
	keyComponent = "component"
	keyRaft      = "raft"
)

// LevelTrace is slog's level for hclog's Trace.
const LevelTrace = slog.LevelDebug - 4

// hclogAdapter routes raft's hclog output to a slog.Logger. hclog's
// key/value pairs become the attributes of a "raft" group.
type hclogAdapter struct {
	l       *slog.Logger
	name    string
	implied []any
	level   *atomic.Int64 // hclog.Level; shared by derived loggers
}

var _ hclog.Logger = (*hclogAdapter)(nil)

// newHCLog returns an hclog.Logger that writes to l. Raft's Info level
// (elections, state changes) is passed as slog Info.
func newHCLog(l *slog.Logger, name string) hclog.Logger {
	lv := new(atomic.Int64)
	lv.Store(int64(hclog.Trace))
	return &hclogAdapter{l: l, name: name, level: lv}
}

func toSlog(level hclog.Level) slog.Level {
	switch level {
	case hclog.Trace:
		return LevelTrace
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	}
	return slog.LevelInfo
}

func (a *hclogAdapter) enabled(level hclog.Level) bool {
	if level < hclog.Level(a.level.Load()) {
		return false
	}
	return a.l.Enabled(context.Background(), toSlog(level))
}

// expected are raft's warnings that describe its normal operation, logged
// at Debug instead. "failed to get previous log" is what a follower says
// when the leader's first AppendEntries reaches a log that is behind, and
// "appendEntries rejected, sending older logs" the leader's side of it:
// every node that joins, or restarts after missing entries, causes them
// once, and raft backs off to the follower's last index by itself. Raft
// gives these only as text, so the message is the key.
var expected = map[string]bool{
	"failed to get previous log":                 true,
	"appendEntries rejected, sending older logs": true,
}

// firstElection is raft's warning when a follower's heartbeat timeout
// passes. With a last leader it names one that went silent, a real event;
// without one the node has heard from no leader since it started, which
// is how every server's first election begins (a lone node on its first
// start, a restart, a mesh's servers coming up together): Info, as the
// election that follows is.
const firstElection = "heartbeat timeout reached, starting election"

func (a *hclogAdapter) Log(level hclog.Level, msg string, args ...any) {
	switch {
	case level != hclog.Warn:
	case expected[msg]:
		level = hclog.Debug
	case msg == firstElection && !knowsLeader(append(append([]any{}, a.implied...), args...)):
		level = hclog.Info
	}
	if level == hclog.Off || !a.enabled(level) {
		return
	}
	all := append(append([]any{}, a.implied...), args...)
	attrs := make([]any, 0, len(all)/2+1)
	for i := 0; i < len(all); i += 2 {
		key := fmt.Sprint(all[i])
		if i+1 >= len(all) {
			attrs = append(attrs, slog.Any("extra", all[i]))
			break
		}
		v := all[i+1]
		switch x := v.(type) {
		case error:
			v = x.Error()
		case hclog.Format:
			if len(x) > 0 {
				if f, ok := x[0].(string); ok {
					v = fmt.Sprintf(f, x[1:]...)
				}
			}
		}
		attrs = append(attrs, slog.Any(key, v))
	}
	a.l.Log(context.Background(), toSlog(level), msg,
		slog.String(keyComponent, a.name), slog.Group(keyRaft, attrs...))
}

// knowsLeader says whether raft's key/value pairs name a last leader
// (last-leader-id or last-leader-addr not empty).
func knowsLeader(kv []any) bool {
	for i := 0; i+1 < len(kv); i += 2 {
		switch fmt.Sprint(kv[i]) {
		case "last-leader-id", "last-leader-addr":
			if v := fmt.Sprint(kv[i+1]); v != "" {
				return true
			}
		}
	}
	return false
}

func (a *hclogAdapter) Trace(msg string, args ...any) { a.Log(hclog.Trace, msg, args...) }
func (a *hclogAdapter) Debug(msg string, args ...any) { a.Log(hclog.Debug, msg, args...) }
func (a *hclogAdapter) Info(msg string, args ...any)  { a.Log(hclog.Info, msg, args...) }
func (a *hclogAdapter) Warn(msg string, args ...any)  { a.Log(hclog.Warn, msg, args...) }
func (a *hclogAdapter) Error(msg string, args ...any) { a.Log(hclog.Error, msg, args...) }

func (a *hclogAdapter) IsTrace() bool { return a.enabled(hclog.Trace) }
func (a *hclogAdapter) IsDebug() bool { return a.enabled(hclog.Debug) }
func (a *hclogAdapter) IsInfo() bool  { return a.enabled(hclog.Info) }
func (a *hclogAdapter) IsWarn() bool  { return a.enabled(hclog.Warn) }
func (a *hclogAdapter) IsError() bool { return a.enabled(hclog.Error) }

func (a *hclogAdapter) ImpliedArgs() []any { return a.implied }

func (a *hclogAdapter) With(args ...any) hclog.Logger {
	c := *a
	c.implied = append(append([]any{}, a.implied...), args...)
	return &c
}

func (a *hclogAdapter) Name() string { return a.name }

func (a *hclogAdapter) Named(name string) hclog.Logger {
	c := *a
	if a.name != "" {
		name = a.name + "." + name
	}
	c.name = name
	return &c
}

func (a *hclogAdapter) ResetNamed(name string) hclog.Logger {
	c := *a
	c.name = name
	return &c
}

func (a *hclogAdapter) SetLevel(level hclog.Level) { a.level.Store(int64(level)) }

func (a *hclogAdapter) GetLevel() hclog.Level { return hclog.Level(a.level.Load()) }

func (a *hclogAdapter) StandardLogger(*hclog.StandardLoggerOptions) *log.Logger {
	return slog.NewLogLogger(a.l.Handler(), slog.LevelInfo)
}

func (a *hclogAdapter) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	return a.StandardLogger(opts).Writer()
}
