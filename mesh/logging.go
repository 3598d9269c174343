package mesh

import (
	"bytes"
	"context"
	"log"
	"log/slog"
)

// memberlistLogger routes memberlist's log.Logger lines into slog at debug
// level, keeping memberlist's own level as an attribute.
func memberlistLogger(l *slog.Logger) *log.Logger {
	return log.New(&slogWriter{l: l.With("component", "memberlist")}, "", 0)
}

type slogWriter struct{ l *slog.Logger }

func (w *slogWriter) Write(p []byte) (int, error) {
	if !w.l.Enabled(context.Background(), slog.LevelDebug) {
		return len(p), nil
	}
	line := bytes.TrimSpace(p)
	level := "INFO"
	if len(line) > 0 && line[0] == '[' {
		if i := bytes.IndexByte(line, ']'); i > 0 {
			level = string(line[1:i])
			line = bytes.TrimSpace(line[i+1:])
		}
	}
	line = bytes.TrimPrefix(line, []byte("memberlist: "))
	w.l.Debug(string(line), "ml_level", level)
	return len(p), nil
}
