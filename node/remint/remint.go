// Package remint observes whether an agent has shown its re-minted session
// name: it reads the tail of the agent's transcript (Claude Code's and
// Codex's transcript_path), keeps only what the assistant wrote, and
// looks there for the name with presence.ShownNames. The path comes from a
// hook payload and is untrusted: only regular files are read, nothing
// under /proc, /sys or /dev, at most Config.TailBytes, within
// Config.Timeout, and at most Config.Parallel reads at once.
package remint

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/clock"
)

// Errors. A refused path or a read that did not finish means "not seen".
var (
	// ErrRefusedPath: the path is not an absolute path to a regular file
	// outside the kernel's pseudo file systems.
	ErrRefusedPath = errors.New("remint: transcript path refused")
	// ErrBusy: Config.Parallel reads are already running.
	ErrBusy = errors.New("remint: too many transcript reads at once")
	// ErrTimeout: the read did not finish within Config.Timeout.
	ErrTimeout = errors.New("remint: transcript read timed out")
)

// Config bounds the reads.
type Config struct {
	// TailBytes is how much of the end of a transcript is read.
	TailBytes int64
	// Timeout bounds one read; Parallel the reads running at once.
	Timeout  time.Duration
	Parallel int
	// Clock times the reads' bound; nil is the real clock.
	Clock clock.Clock
}

// DefaultConfig reads the last 256 KiB within 250 ms, 4 at once.
func DefaultConfig() Config {
	return Config{TailBytes: 256 << 10, Timeout: 250 * time.Millisecond, Parallel: 4}
}

// Reader reads transcripts. It is safe for concurrent use.
type Reader struct {
	cfg Config
	sem chan struct{}
}

// New returns a Reader.
func New(cfg Config) *Reader {
	d := DefaultConfig()
	if cfg.TailBytes <= 0 {
		cfg.TailBytes = d.TailBytes
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = d.Timeout
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = d.Parallel
	}
	cfg.Clock = clock.Or(cfg.Clock)
	return &Reader{cfg: cfg, sem: make(chan struct{}, cfg.Parallel)}
}

// Shows reports whether the assistant's text in the tail of the transcript
// at path shows name (as presence.ShownNames finds names).
//
// The read runs in a goroutine the Reader owns: it ends when the read
// returns. A read the kernel keeps waiting (a hung network file system)
// outlives the call, holding one of the Parallel slots until it returns;
// the caller never waits more than Timeout.
func (r *Reader) Shows(path, name string) (bool, error) {
	if name == "" {
		return false, nil
	}
	select {
	case r.sem <- struct{}{}:
	default:
		return false, ErrBusy
	}
	type result struct {
		ok  bool
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() { <-r.sem }()
		tail, err := readTail(path, r.cfg.TailBytes)
		if err != nil {
			done <- result{err: err}
			return
		}
		done <- result{ok: TextShows(AssistantText(tail), name)}
	}()
	t := r.cfg.Clock.NewTimer(r.cfg.Timeout)
	defer t.Stop()
	select {
	case res := <-done:
		return res.ok, res.err
	case <-t.C():
		return false, fmt.Errorf("%w after %s: %s", ErrTimeout, r.cfg.Timeout, path)
	}
}

// pseudo are the kernel's file systems, never read.
var pseudo = []string{"/proc", "/sys", "/dev"}

// readTail returns at most max bytes from the end of the regular file at
// path, starting at a line boundary.
func readTail(path string, max int64) ([]byte, error) {
	if path == "" || !filepath.IsAbs(path) || strings.ContainsRune(path, 0) {
		return nil, fmt.Errorf("%w: %q is not an absolute path", ErrRefusedPath, path)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRefusedPath, err)
	}
	for _, p := range pseudo {
		if real == p || strings.HasPrefix(real, p+"/") {
			return nil, fmt.Errorf("%w: %s is under %s", ErrRefusedPath, path, p)
		}
	}
	// O_NONBLOCK: a FIFO swapped in after the check does not block the
	// open; O_NOFOLLOW: nor does a symlink swapped in.
	fd, err := unix.Open(real, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRefusedPath, err)
	}
	f := os.NewFile(uintptr(fd), real)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrRefusedPath, path)
	}
	off := max64(0, fi.Size()-max)
	buf := make([]byte, fi.Size()-off)
	n, err := f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	buf = buf[:n]
	if off > 0 {
		// The first line is cut: skip it.
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			buf = buf[i+1:]
		} else {
			buf = nil
		}
	}
	return buf, nil
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// AssistantText returns the texts the assistant wrote in a JSONL
// transcript, latest first: under any object whose role is "assistant"
// or whose type is "assistant" or "agent_message", the string values of
// "text" and "message" keys. What the user, the system or a hook wrote
// (harn's own reminder among them) is left out, so that it never counts
// as shown. Lines that are not JSON are skipped.
func AssistantText(jsonl []byte) []string {
	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(jsonl))
	sc.Buffer(make([]byte, 0, 64<<10), len(jsonl)+1)
	for sc.Scan() {
		if l := bytes.TrimSpace(sc.Bytes()); len(l) > 0 && l[0] == '{' {
			lines = append(lines, l)
		}
	}
	var out []string
	for i := len(lines) - 1; i >= 0; i-- {
		var v any
		if json.Unmarshal(lines[i], &v) != nil {
			continue
		}
		out = collect(v, false, out, 0)
	}
	return out
}

// maxDepth bounds the walk of one transcript line.
const maxDepth = 32

func collect(v any, assistant bool, out []string, depth int) []string {
	if depth > maxDepth {
		return out
	}
	switch x := v.(type) {
	case map[string]any:
		if r, _ := x["role"].(string); r == "assistant" {
			assistant = true
		}
		if t, _ := x["type"].(string); t == "assistant" || t == "agent_message" {
			assistant = true
		}
		for k, c := range x {
			if s, ok := c.(string); ok {
				if assistant && (k == "text" || k == "message") {
					out = append(out, s)
				}
				continue
			}
			out = collect(c, assistant, out, depth+1)
		}
	case []any:
		for _, c := range x {
			out = collect(c, assistant, out, depth+1)
		}
	}
	return out
}

// TextShows reports whether one of texts shows name in the projection
// pattern (presence.ShownNames).
func TextShows(texts []string, name string) bool {
	for _, t := range texts {
		if !strings.Contains(t, "Agent ") {
			continue
		}
		for line := range strings.SplitSeq(t, "\n") {
			if !strings.Contains(line, "Agent ") {
				continue
			}
			for _, c := range presence.ShownNames(line) {
				if c == name {
					return true
				}
			}
		}
	}
	return false
}
