package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// The README walk's foreground commands: `make run` is typed into a
// terminal of its own and keeps it; the reader goes on in another one.

// walkTerm is one foreground command in a pseudo-terminal, as a person
// runs it: bash -c LINE, its output read until it exits.
type walkTerm struct {
	t    *testing.T
	line string
	cmd  *exec.Cmd
	f    *os.File
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{} // closed when the command exited and its output is read
}

// startTerm runs line in a new 40x200 terminal, in dir, with environ.
// The terminal's reader is its own: it ends with the command, and the
// cleanup waits for it.
func startTerm(t *testing.T, line, dir string, environ []string) *walkTerm {
	t.Helper()
	w := &walkTerm{t: t, line: line, done: make(chan struct{})}
	w.cmd = exec.Command("bash", "--noprofile", "--norc", "-c", line)
	w.cmd.Dir, w.cmd.Env = dir, append(append([]string(nil), environ...), "TERM=xterm-256color")
	f, err := pty.StartWithSize(w.cmd, &pty.Winsize{Rows: 40, Cols: 200})
	if err != nil {
		t.Fatal(err)
	}
	w.f = f
	go func() {
		defer close(w.done)
		buf := make([]byte, 8192)
		for {
			n, err := f.Read(buf)
			w.mu.Lock()
			w.out.Write(buf[:n])
			w.mu.Unlock()
			if err != nil {
				break
			}
		}
		w.cmd.Wait()
	}()
	t.Cleanup(func() {
		select {
		case <-w.done:
		default:
			syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
			<-w.done
		}
		f.Close()
	})
	return w
}

func (w *walkTerm) output() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.ReplaceAll(w.out.String(), "\r\n", "\n")
}

// waitFor waits, at most d, until the terminal showed s.
func (w *walkTerm) waitFor(s string, d time.Duration) string {
	w.t.Helper()
	deadline := time.Now().Add(d)
	for i := 0; i < 100000; i++ {
		o := w.output()
		if strings.Contains(o, s) {
			return o
		}
		select {
		case <-w.done:
			w.t.Fatalf("%q exited before it showed %q:\n%s", w.line, s, w.output())
		default:
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(pollEvery)
	}
	w.t.Fatalf("%q did not show %q within %v:\n%s", w.line, s, d, w.output())
	return ""
}

// interrupt is Ctrl+C typed into the terminal; it waits, at most d, for
// the command to end.
func (w *walkTerm) interrupt(d time.Duration) {
	w.t.Helper()
	if _, err := w.f.Write([]byte{3}); err != nil {
		w.t.Fatal(err)
	}
	select {
	case <-w.done:
	case <-time.After(d):
		w.t.Fatalf("%q did not stop within %v of Ctrl+C:\n%s", w.line, d, w.output())
	}
}

var (
	backticked = regexp.MustCompile("`([^`]+)`")
	boardLine  = regexp.MustCompile(`(?m)^\s*board\s+(http://\S+\?token=\S+)\s*$`)
)

// nodeBanner is what a node started on a terminal printed: its board's
// URL with the token, the command that prints that URL again, and the
// next commands, in order.
type nodeBanner struct {
	board, webURL string
	next          []string
}

// readBanner reads the banner out of a terminal's output.
func readBanner(t *testing.T, out string) nodeBanner {
	t.Helper()
	var b nodeBanner
	if m := boardLine.FindStringSubmatch(out); m != nil {
		b.board = m[1]
	}
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "next "):
			for _, m := range backticked.FindAllStringSubmatch(l, -1) {
				b.next = append(b.next, m[1])
			}
		case strings.Contains(l, "prints it again"):
			if m := backticked.FindStringSubmatch(l); m != nil {
				b.webURL = m[1]
			}
		}
	}
	if b.board == "" || b.webURL == "" || len(b.next) == 0 {
		t.Fatalf("the node's banner names no board, URL command or next command:\n%s", out)
	}
	return b
}

// checkBoardURL: the printed URL opens the board (the token signs in).
func checkBoardURL(t *testing.T, u string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("the printed board URL: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the printed board URL %s answered %s, want 200", u, resp.Status)
	}
}

// noWarnings: a log shows no WARN or ERROR record (text or JSON).
func noWarnings(t *testing.T, what, out string) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") ||
			strings.Contains(l, `"level":"WARN"`) || strings.Contains(l, `"level":"ERROR"`) {
			t.Errorf("%s logged %q", what, l)
		}
	}
}

// logHints are the commands the last "ready" record (JSON) in a node's
// log file names: the one that prints the board's URL, and the next
// ones; n counts the ready records.
func logHints(t *testing.T, path string) (hints []string, n int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		var rec struct {
			Msg      string   `json:"msg"`
			SignedIn string   `json:"board_signed_in"`
			Next     []string `json:"next"`
		}
		if jsonLine(l, &rec) && rec.Msg == "ready" {
			hints = append([]string{rec.SignedIn}, rec.Next...)
			n++
		}
	}
	return hints, n
}

// jsonLine decodes l into v when it is a JSON object.
func jsonLine(l string, v any) bool {
	l = strings.TrimSpace(l)
	return strings.HasPrefix(l, "{") && json.Unmarshal([]byte(l), v) == nil
}
