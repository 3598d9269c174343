package taskwire

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/harn-dev/harn/runtime/execwire"
)

// A launcher is a name for a fixed argv: the operator of a node defines it
// (`[launchers]` in the config file, or --launcher NAME=ARGV), and a task
// start names it instead of giving a command. Another node may start only
// the launchers the node's --remote-exec lists, never a command of its own.

// Errors of launchers.
var (
	// ErrBadLauncher: a launcher definition, or a --remote-exec entry,
	// that does not parse.
	ErrBadLauncher = errors.New("tasks: bad launcher")
	// ErrNoLauncher: a start names a launcher this node does not define.
	ErrNoLauncher = errors.New("tasks: no such launcher")
)

// Bounds of launcher definitions.
const (
	MaxLaunchers       = 64
	MaxLauncherNameLen = 64
)

// Launchers maps a launcher's name to its argv.
type Launchers map[string][]string

// ValidLauncherName accepts 1 to 64 bytes of [A-Za-z0-9._-], starting with
// a letter or digit.
func ValidLauncherName(name string) error {
	if name == "" || len(name) > MaxLauncherNameLen {
		return fmt.Errorf("%w: launcher name %q: want 1 to %d characters", ErrBadLauncher, Clip(name), MaxLauncherNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || (i > 0 && (c == '.' || c == '_' || c == '-'))
		if !ok {
			return fmt.Errorf("%w: launcher name %q: use letters, digits, '.', '_' and '-', starting with a letter or digit", ErrBadLauncher, Clip(name))
		}
	}
	return nil
}

// Clip bounds untrusted text quoted in an error: 80 bytes, control
// characters shown as '?'.
func Clip(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}

// CheckArgv checks a launcher's argv: at least the program, within the
// bounds of a command, with no NUL or line break in a word.
func CheckArgv(name string, argv []string) error {
	if len(argv) == 0 || argv[0] == "" {
		return fmt.Errorf("%w: launcher %s: the argv is empty; give at least the program", ErrBadLauncher, name)
	}
	if len(argv) > execwire.MaxCommandWords {
		return fmt.Errorf("%w: launcher %s: over %d words", ErrBadLauncher, name, execwire.MaxCommandWords)
	}
	n := 0
	for _, w := range argv {
		n += len(w) + 1
		if strings.ContainsAny(w, "\x00\n\r") {
			return fmt.Errorf("%w: launcher %s: a word holds a NUL or a line break", ErrBadLauncher, name)
		}
	}
	if n > execwire.MaxCommandBytes {
		return fmt.Errorf("%w: launcher %s: over %d bytes", ErrBadLauncher, name, execwire.MaxCommandBytes)
	}
	return nil
}

// ParseLauncherFlag reads one --launcher NAME=ARGV: ARGV is split into
// words as a shell splits them, with no shell (execwire.ParseCommand).
func ParseLauncherFlag(s string) (string, []string, error) {
	name, cmd, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if !ok {
		return "", nil, fmt.Errorf("%w: --launcher %q: want NAME=ARGV", ErrBadLauncher, Clip(s))
	}
	if err := ValidLauncherName(name); err != nil {
		return "", nil, err
	}
	argv, err := execwire.ParseCommand(cmd)
	if err != nil {
		return "", nil, fmt.Errorf("%w: launcher %s: %w", ErrBadLauncher, name, err)
	}
	if err := CheckArgv(name, argv); err != nil {
		return "", nil, err
	}
	return name, argv, nil
}

// Check validates every definition and the count.
func (l Launchers) Check() error {
	if len(l) > MaxLaunchers {
		return fmt.Errorf("%w: %d launchers, over %d", ErrBadLauncher, len(l), MaxLaunchers)
	}
	for _, name := range l.Names() {
		if err := ValidLauncherName(name); err != nil {
			return err
		}
		if err := CheckArgv(name, l[name]); err != nil {
			return err
		}
	}
	return nil
}

// Names lists the launchers, sorted.
func (l Launchers) Names() []string {
	out := make([]string, 0, len(l))
	for n := range l {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ParseRemoteExec reads --remote-exec: "" or "none" (the default: no
// launcher may be started from another node), or NAME,... of launchers
// defined in l.
func ParseRemoteExec(s string, l Launchers) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "none" {
		return nil, nil
	}
	var out []string
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		if err := ValidLauncherName(n); err != nil {
			return nil, fmt.Errorf("--remote-exec: %w", err)
		}
		if _, ok := l[n]; !ok {
			return nil, fmt.Errorf("%w: --remote-exec names %q, which this node does not define; define it ([launchers] in the config file, or --launcher %s=ARGV) or drop it", ErrBadLauncher, n, n)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}
