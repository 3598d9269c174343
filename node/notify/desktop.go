package notify

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"time"

	"github.com/harn-dev/harn/util/text"
)

// Desktop shows one notification on this machine's desktop. Notify must
// return soon after ctx is done: the engine's Close waits for it.
type Desktop interface {
	Notify(ctx context.Context, title, body string) error
}

// DefaultDesktopTimeout bounds one desktop notification.
const DefaultDesktopTimeout = 5 * time.Second

// ErrDesktop is the sentinel under a failed desktop notification.
var ErrDesktop = errors.New("notify: desktop notification failed")

// DesktopCommand returns the command that shows a notification on goos,
// using the first of the known programs that lookPath finds: notify-send
// (Linux and other Unix desktops) or osascript (macOS), preferring the
// native one. ok is false when neither exists. The title and body pass as
// separate arguments, never through a shell or a script's text.
func DesktopCommand(goos string, lookPath func(string) (string, error), title, body string) (name string, args []string, ok bool) {
	title = text.Clip(text.OneLine(title), MaxTitle)
	body = text.Clip(text.OneLine(body), MaxText)
	order := []string{"notify-send", "osascript"}
	if goos == "darwin" {
		order = []string{"osascript", "notify-send"}
	}
	for _, prog := range order {
		path, err := lookPath(prog)
		if err != nil || path == "" {
			continue
		}
		switch prog {
		case "notify-send":
			return path, []string{"--app-name=harn", "--", title, body}, true
		case "osascript":
			// The script reads its text from argv, so no quoting of agent
			// text into AppleScript is needed.
			return path, []string{
				"-e", "on run argv",
				"-e", "display notification (item 2 of argv) with title (item 1 of argv)",
				"-e", "end run",
				title, body}, true
		}
	}
	return "", nil, false
}

// ExecDesktop is the real Desktop: it runs DesktopCommand's program with a
// timeout, and does nothing (returning nil) when no program exists.
type ExecDesktop struct {
	goos     string
	lookPath func(string) (string, error)
	timeout  time.Duration
	run      func(ctx context.Context, name string, args []string) error
}

// NewExecDesktop returns the desktop notifier of this machine; each
// notification runs at most timeout (DefaultDesktopTimeout when zero).
func NewExecDesktop(timeout time.Duration) *ExecDesktop {
	if timeout <= 0 {
		timeout = DefaultDesktopTimeout
	}
	return &ExecDesktop{goos: runtime.GOOS, lookPath: exec.LookPath, timeout: timeout, run: runCommand}
}

// Available reports whether a notification program exists.
func (d *ExecDesktop) Available() bool {
	_, _, ok := DesktopCommand(d.goos, d.lookPath, "", "")
	return ok
}

// Notify shows title and body, or skips quietly when no program exists.
func (d *ExecDesktop) Notify(ctx context.Context, title, body string) error {
	name, args, ok := DesktopCommand(d.goos, d.lookPath, title, body)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	if err := d.run(ctx, name, args); err != nil {
		return fmt.Errorf("%w: %w", ErrDesktop, err)
	}
	return nil
}

func runCommand(ctx context.Context, name string, args []string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = time.Second
	return cmd.Run()
}
