package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// TestNodeLogsJSONWhenNotATerminal: the node's log is one JSON object a
// line when stderr is not a terminal (a pipe, a file, a log collector).
func TestNodeLogsJSONWhenNotATerminal(t *testing.T) {
	var buf bytes.Buffer
	nodeLogger(&buf, slog.LevelInfo).Info("node started", "sessions", 3)
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("not JSON: %q: %v", buf.String(), err)
	}
	if m["msg"] != "node started" || m["sessions"] != float64(3) {
		t.Errorf("log line %v", m)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Error("a regular file reads as a terminal")
	}
}

// openPTY opens a pseudo-terminal pair and returns its terminal side.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("pty number: %v", err)
	}
	pts, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open pty: %v", err)
	}
	t.Cleanup(func() { pts.Close() })
	return pts
}

// TestNodeLogsTextOnATerminal: on a terminal the log is slog's text
// (key=value) for people.
func TestNodeLogsTextOnATerminal(t *testing.T) {
	tty := openPTY(t)
	if !isTerminal(tty) {
		t.Fatal("a pseudo-terminal does not read as a terminal")
	}
	if _, ok := nodeLogger(tty, slog.LevelInfo).Handler().(*slog.TextHandler); !ok {
		t.Error("the logger on a terminal is not slog's text handler")
	}
	var buf bytes.Buffer
	if _, ok := nodeLogger(&buf, slog.LevelInfo).Handler().(*slog.JSONHandler); !ok {
		t.Error("the logger off a terminal is not slog's JSON handler")
	}
}
