package subagent

import (
	"encoding/json"
	"errors"
	"time"
)

// Limits of the manager (seed 001: the 16-child limit).
const (
	// MaxRunning is how many children run at once, per parent session
	// and per node.
	MaxRunning = 16
	// MaxQueued is how many more of one parent's requests may wait for a
	// slot (a queued start); beyond it a request is refused with
	// BusyText. MaxNodeQueued bounds the node's whole queue.
	MaxQueued     = 16
	MaxNodeQueued = 64
	// MaxBriefBytes bounds a brief.
	MaxBriefBytes = 32 << 10
	// maxLive bounds the ended children the manager keeps in memory for
	// Get; the Store keeps them all.
	maxLive = 4096
)

// BusyText is what the agent tool answers the model when a request can
// neither run nor wait: runaway fan-out is refused, not queued without
// bound.
const BusyText = "16 running; wait for one"

// AskAgainText is the follow-up a child gets, once, when its turn ended
// without a valid handoff.
const AskAgainText = "Your turn ended without a valid handoff. Call the handoff tool now with status, changes, verification and unresolved; this is the only reminder."

// ReasonLost is the reason of a child the node's restart cut short.
const ReasonLost = "the node restarted while the child ran; it was not resumed"

// Errors of the room.
var (
	ErrBadRequest = errors.New("subagent: bad request")
	ErrNoChild    = errors.New("subagent: no such child")
	ErrClosed     = errors.New("subagent: the manager is closed")
	// ErrBusy is a request refused at the limit (BusyError).
	ErrBusy = errors.New("subagent: at the limit of running children")
)

// BusyError refuses a request at the limit; its text is BusyText.
type BusyError struct {
	Parent  string // the parent session
	Running int    // the parent's running children
	Node    int    // the node's running children
	Queued  int    // the parent's queued requests
}

func (e *BusyError) Error() string { return BusyText }

// Unwrap gives ErrBusy.
func (e *BusyError) Unwrap() error { return ErrBusy }

// State is where a child is in its life.
type State string

// The states.
const (
	StateQueued  State = "queued"  // waiting for a slot
	StateRunning State = "running" // its task was started
	StateEnded   State = "ended"   // it has its Outcome
)

// Outcome is how a child ended; every request ends with exactly one.
type Outcome string

// The outcomes.
const (
	OutcomeValid     Outcome = "valid"     // a validated handoff
	OutcomeInvalid   Outcome = "invalid"   // no valid handoff after one more ask
	OutcomeCancelled Outcome = "cancelled" // the parent or an operator stopped it first
	OutcomeLost      Outcome = "lost"      // the node stopped or restarted while it ran
	OutcomeFailed    Outcome = "failed"    // it could not be started
)

// Child is the durable record of one child run.
type Child struct {
	ID         string    `json:"id"`     // the child's session id
	Parent     string    `json:"parent"` // the parent session
	ParentTask string    `json:"parent_task,omitempty"`
	Call       string    `json:"call,omitempty"` // the parent's agent tool call
	Profile    string    `json:"profile"`
	Brief      string    `json:"brief"`
	Workdir    string    `json:"workdir,omitempty"`
	State      State     `json:"state"`
	Outcome    Outcome   `json:"outcome,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	Handoff    *Handoff  `json:"handoff,omitempty"`
	Asked      bool      `json:"asked,omitempty"` // the handoff was asked for once more
	Created    time.Time `json:"created"`
	Started    time.Time `json:"started,omitzero"`
	Ended      time.Time `json:"ended,omitzero"`
}

// Result is what the parent's model receives of a child: its handoff,
// or why there is none; never the child's transcript.
type Result struct {
	Child   string   `json:"child"`
	Profile string   `json:"profile"`
	Outcome Outcome  `json:"outcome"`
	Handoff *Handoff `json:"handoff,omitempty"`
	Reason  string   `json:"reason,omitempty"`
}

// ResultOf is a child's Result.
func ResultOf(c Child) Result {
	return Result{Child: c.ID, Profile: c.Profile, Outcome: c.Outcome, Handoff: c.Handoff, Reason: c.Reason}
}

// JSON is the result as the tool's answer.
func (r Result) JSON() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// Store keeps child records durably (the node's Pebble). Put replaces the
// record of c.ID; Scan visits every record, in any order.
type Store interface {
	Put(c Child) error
	Scan(fn func(Child) error) error
}

// Spec is what a Runner needs to start one child.
type Spec struct {
	Child   Child
	Profile Profile
	// Prompt is the child's first task text: the brief, after the
	// profile's /skill activations.
	Prompt string
}

// Runner executes children (node/tasks: a harn task in a session of its
// own). Its methods must not call back into the Manager synchronously
// except Handoff and Ended from the child's own goroutines.
type Runner interface {
	// Start opens the child's session and starts its task. When it
	// returns nil, the runner owes the manager one Ended for the child
	// (or the manager's Close).
	Start(s Spec) error
	// Ask sends the child a follow-up task (the handoff asked again).
	Ask(child, text string) error
	// Cancel stops the child's running task.
	Cancel(child, reason string) error
	// Close is told that the child ended with c's outcome: it announces
	// the end (subagent.stop) and releases the child's session.
	Close(c Child)
}
