package tui

import (
	"context"
	"errors"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/tasks/taskwire"
	"github.com/harn-dev/harn/util/clock"
)

// Node is what the TUI needs of the node: task actions at a session's
// owner (owner "" is the local node) and the roster (the session picker,
// the children, short ids). The command in package cli builds it.
type Node interface {
	Task(ctx context.Context, owner string, a taskwire.Action) (taskwire.Result, error)
	Sessions(ctx context.Context) ([]*api.SessionRow, error)
}

// Prompt is a modal y/n question: a title, the lines that say what it is
// about, a diff (drawn coloured), and what the answer does. The TUI shows
// one at a time, before the pending approvals; y or n (with the input
// empty) answers it. Every text in it is sanitized when drawn.
type Prompt struct {
	Title  string
	Lines  []string
	Diff   string
	Answer func(yes bool) tea.Cmd
}

// Config is what Run needs.
type Config struct {
	Node Node
	// Session is the session to show ("" for none: the picker when
	// Picker lists any, else a new one at the first prompt), Owner the
	// node that owns it, and First its first history answer (nil: read
	// at start).
	Session, Owner string
	First          *taskwire.Result
	// Start is a new session's start action without its text (nil: this
	// TUI starts none, as attach); its Harn.Model may be empty until
	// /model names one.
	Start *taskwire.Action
	// Picker lists the earlier sessions of this directory, newest first:
	// when Session is "" and it is not empty, the TUI opens with the
	// picker.
	Picker []*api.SessionRow
	// Dir is the working directory (a new session's).
	Dir string
	// Prompts are questions other rooms ask (trust a directory's MCP
	// servers?): each shows as a Prompt until answered.
	Prompts <-chan Prompt
	// ErrText is an error as one line for a person (nil: err.Error()).
	ErrText func(error) string
	// Clock reads the time (how long an approval waited); nil: real.
	Clock clock.Clock
	// Width and Height are the screen's size until the terminal says.
	Width, Height int
}

// DefaultConfig is a Config with its defaults.
func DefaultConfig() Config {
	return Config{Clock: clock.Real{}, Width: 100, Height: 30}
}

// ErrConfig is a Config that cannot run.
var ErrConfig = errors.New("tui: bad config")

// Validate checks c.
func (c Config) Validate() error {
	if c.Node == nil {
		return errors.Join(ErrConfig, errors.New("a Node is required"))
	}
	if c.Start != nil && c.Start.Harn == nil {
		return errors.Join(ErrConfig, errors.New("a start action needs its harn options"))
	}
	return nil
}

// Bounds of the TUI's calls.
const (
	// pollWait is how long one history call waits for an event.
	pollWait = time.Second
	// callTimeout bounds one task action.
	callTimeout = 12 * time.Second
	// retryAfter is the pause after a failed history call.
	retryAfter = time.Second
	// rosterEvery is how often the roster is read (children, ids, cwd).
	rosterEvery = 2 * time.Second
	// maxInput bounds the input's characters.
	maxInput = 16 << 10
	// maxPicker bounds the sessions the picker lists.
	maxPicker = 200
)
