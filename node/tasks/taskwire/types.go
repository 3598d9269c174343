package taskwire

import (
	"errors"
	"time"

	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/execwire"
)

// ErrBadAction is an action that does not parse or cannot be run as given.
var ErrBadAction = errors.New("tasks: bad action")

// The operations of an Action.
const (
	OpStart     = "start"
	OpSteer     = "steer"
	OpFollowUp  = "follow_up"
	OpSupersede = "supersede"
	OpResume    = "resume"
	OpCancel    = "cancel"
	OpReplace   = "replace"
	OpAck       = "ack"
	OpGrants    = "grants"
	OpDigest    = "digest"
	OpConfirm   = "confirm"
	OpDeny      = "deny"
	OpShow      = "show"
	OpReduce    = "reduce" // shrink a task's ceiling: Capability (a name or pattern) to Level
	OpEvents    = "events" // a harn task's loop events from Since on (waits up to WaitMS for one); answers with Events and Session only
	// OpHistory reads a harn session's loop events in order, across its
	// tasks, from the session cursor Since on (waiting up to WaitMS for
	// one), with the session's view and its context line: what a TUI
	// paints from.
	OpHistory = "history"
	OpUsage   = "usage" // sums the model-call tokens of this node's ledger
	// OpPin pins Text into a harn session's context: a user message that
	// stays in every request. While a task runs it lands at the next step
	// boundary (never inside a tool exchange).
	OpPin = "pin"
	// OpCompact compacts a harn session's context now (while a task runs:
	// at its next step boundary), whatever the admission line.
	OpCompact = "compact"
)

// AgentHarn names harn's own agent loop as a task's agent
// (`harn task start --agent harn`, `harn ask`).
const AgentHarn = "harn"

// ReasonNodeRestart is the end reason of a runtime session, and of its
// open task, that the node's previous run left behind.
const ReasonNodeRestart = "node_restart"

// Action is one operator action on a task runtime, from the local CLI or
// routed from another node.
type Action struct {
	Op              string          `json:"op"`
	Session         string          `json:"session,omitempty"` // a session id, prefix or name
	Task            string          `json:"task,omitempty"`
	Text            string          `json:"text,omitempty"`
	Command         string          `json:"command,omitempty"`  // start: a new runtime session running this command
	Launcher        string          `json:"launcher,omitempty"` // start: a new runtime session running this node's launcher
	Workdir         string          `json:"workdir,omitempty"`
	Grants          []runtime.Grant `json:"grants,omitempty"` // nil: the default profile
	RequiresSuccess bool            `json:"requires_success,omitempty"`
	Call            string          `json:"call,omitempty"`
	Reason          string          `json:"reason,omitempty"`
	By              string          `json:"by,omitempty"`
	Capability      string          `json:"capability,omitempty"` // reduce
	Level           string          `json:"level,omitempty"`      // reduce
	// Agent "harn" (start): a new runtime session running harn's own
	// loop, configured by Harn.
	Agent  string       `json:"agent,omitempty"`
	Harn   *HarnOptions `json:"harn,omitempty"`
	Since  int          `json:"since,omitempty"`   // events
	WaitMS int          `json:"wait_ms,omitempty"` // events
}

// Result is what an action returns (on the wire: api.TaskResult; its JSON
// is the CLI's --json view).
type Result struct {
	Node    string                `json:"node"`
	Session string                `json:"session,omitempty"`
	Task    *runtime.TaskView     `json:"task,omitempty"`
	Text    string                `json:"text,omitempty"`
	Output  []string              `json:"output,omitempty"`
	Steer   *execwire.SteerResult `json:"steer,omitempty"`
	Grants  *runtime.GrantsView   `json:"grants,omitempty"`
	Digest  *runtime.Handoff      `json:"digest,omitempty"`
	View    *runtime.SessionView  `json:"session_view,omitempty"`
	Message string                `json:"message,omitempty"`
	// Interrupt: cancel and supersede of a running task say whether the
	// agent is interrupted: "sent: …" when harn started its process,
	// "not possible: …" for an external agent's session.
	Interrupt string `json:"interrupt,omitempty"`
	// Events (events): a harn task's loop events from the asked index on.
	Events []runtime.LoopEvent `json:"events,omitempty"`
	// Usage (usage): the model-call tokens of the node's ledger.
	Usage []UsageRow `json:"usage,omitempty"`
	// Steps (show): the task's steps from its ledger, in order;
	// StepsOmitted counts the earlier ones left out (over MaxSteps).
	Steps        []Step `json:"steps,omitempty"`
	StepsOmitted int    `json:"steps_omitted,omitempty"`
	// Next (history): the session cursor after Events; Context: the
	// session's context line.
	Next    int          `json:"next,omitempty"`
	Context *ContextInfo `json:"context,omitempty"`
	// QueueText (history): the text of each task of View.Queue, in its
	// order, clipped to QueueTextBytes.
	QueueText []string `json:"queue_text,omitempty"`
	// Reopened (start, follow-up, supersede): the action opened the harn
	// session again; it had ended (harn ask ends its own), or the node
	// restarted since.
	Reopened bool `json:"reopened,omitempty"`
}

// ContextInfo is a harn session's context line: the input tokens of its
// last model call (the provider's count, else harn's estimate), the
// usable input budget, and how its context was last compacted (empty
// until the session's context reports compactions).
type ContextInfo struct {
	Used       int    `json:"used"`
	Budget     int    `json:"budget"`
	Compaction string `json:"compaction,omitempty"`
	// CompactedAt is when that compaction ran (zero: none reported).
	CompactedAt time.Time `json:"compacted_at,omitempty"`
}

// IsSessionOp reports whether op names its target by session (else by
// task).
func IsSessionOp(op string) bool {
	switch op {
	case OpStart, OpSteer, OpFollowUp, OpSupersede, OpHistory, OpPin, OpCompact:
		return true
	}
	return false
}

// MaxSteps bounds the steps `harn task show` returns: the last ones.
const MaxSteps = 1000

// The kinds of a Step.
const (
	StepModel   = "model"   // a model call: Name the model, its tokens, digests of request and answer
	StepTool    = "tool"    // a tool call: Name the tool, Outcome (pending, running or how it ended), digests of input and output
	StepRefused = "refused" // a call refused before it ran: Outcome the check
	StepConfirm = "confirm" // an operator confirmed a waiting call
	StepDeny    = "deny"    // an operator denied a waiting call
	StepReduce  = "reduce"  // the task's ceiling shrank: Name the capability, Level
	StepCancel  = "cancel"  // cancellation was requested: Outcome cancelled or superseded
	StepAck     = "ack"     // an operator acknowledged unknown outcomes
)

// Step is one step of a task, read from its ledger. Digests are keyed
// (HMAC-SHA256 with the node key): they prove what was sent and received
// without holding it.
type Step struct {
	Seq          uint64    `json:"seq"`
	At           time.Time `json:"at"`
	Kind         string    `json:"kind"`
	Name         string    `json:"name,omitempty"`
	Call         string    `json:"call,omitempty"`
	Outcome      string    `json:"outcome,omitempty"`
	Level        string    `json:"level,omitempty"`
	By           string    `json:"by,omitempty"`
	Reason       string    `json:"reason,omitempty"`
	Estimated    int       `json:"estimated_input,omitempty"`
	Input        int       `json:"input_tokens,omitempty"`
	Output       int       `json:"output_tokens,omitempty"`
	InputDigest  string    `json:"input_digest,omitempty"`
	OutputDigest string    `json:"output_digest,omitempty"`
}

// UsageRow is the tokens of one group of model calls.
type UsageRow struct {
	Key        string `json:"key"` // the session, agent or node
	Model      string `json:"model"`
	Calls      int    `json:"calls"`
	Estimated  int    `json:"estimated_input"`
	Input      int    `json:"input"`
	Output     int    `json:"output"`
	CacheRead  int    `json:"cache_read,omitempty"`
	CacheWrite int    `json:"cache_write,omitempty"`
	Node       string `json:"node,omitempty"` // the node whose ledger holds it (a mesh-wide sum)
}

// HarnOptions configure the loop of a new harn session. Key is never
// stored nor forwarded to another node; MCP entries are NAME=COMMAND
// stdio servers the tool box starts for this session. A follow-up,
// supersede or start on an existing session that carries HarnOptions may
// reopen it when it has ended: only its Key is read then (the session
// keeps the options it was opened with).
type HarnOptions struct {
	Provider      string   `json:"provider,omitempty"` // openai (default) or anthropic
	URL           string   `json:"provider_url,omitempty"`
	Model         string   `json:"model,omitempty"`
	ContextWindow int      `json:"context_window,omitempty"`
	MaxOutput     int      `json:"max_output,omitempty"`
	MCP           []string `json:"mcp,omitempty"`
	Key           string   `json:"key,omitempty"`
	Fork          string   `json:"fork,omitempty"`          // the session whose lane the new one forks (harn ask --fork)
	NoCompaction  bool     `json:"no_compaction,omitempty"` // --compaction=false: the fallback only when over budget
	Compaction    bool     `json:"compaction,omitempty"`    // --compaction: LLM compaction on; neither: the node's compaction.enabled
}

// QueueTextBytes bounds each text of a history answer's QueueText.
const QueueTextBytes = 200

// The phases of a hook's question.
const (
	PhasePre  = "pre"  // before a tool call (PreToolUse): may it run?
	PhasePost = "post" // after it (PostToolUse): how it ended
)

// The decisions.
const (
	DecideAllow = "allow" // the task's grants allow the call
	DecideDeny  = "deny"  // refused: Reason says why
	DecideNone  = "none"  // no harn task governs the session: no opinion
	// DecideConfirm: the call waits for `harn task confirm` (an answer
	// given without a wait, in an Append); ask Decide again, with a Wait,
	// under the same call id.
	DecideConfirm = "confirm"
)

// Query is a hook's question about one tool call of an agent.
type Query struct {
	Phase   string
	Session string // the agent's session id (the hook payload's)
	Task    string // HARN_TASK from the agent's environment, when set
	Tool    string
	Input   []byte // the raw tool_input JSON: matched, digested, never stored
	Call    string // the agent's call id (tool_use_id)
	Failed  bool   // post: the call failed
	// Wait bounds how long a call that needs a confirmation waits for
	// `harn task confirm`; without one in time it is denied.
	Wait time.Duration
	// Cwd is the hook payload's working directory: where the call runs.
	Cwd string
}

// Verdict answers a Query.
type Verdict struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
	Task     string `json:"task,omitempty"`
	Call     string `json:"call,omitempty"`
}

// The kinds of a Request.
const (
	// KindPermission is an agent's permission request that its hook
	// holds for an answer from anywhere (`harn agents approve|deny ID`).
	KindPermission = "permission"
	// KindConfirmation is a harn task's call that waits for `harn task
	// confirm` (harn's own agent's call, or an external agent's under a
	// task's confirm grant): ID is the call's id.
	KindConfirmation = "confirmation"
)

// Request is a call that waits for an operator's decision, from anywhere
// in the mesh (`harn agents pending`): an agent's open permission
// request, or a harn task's call that waits for its confirmation.
type Request struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"`
	Session string `json:"session"`
	Node    string `json:"node"`
	Agent   string `json:"agent"`
	Tool    string `json:"tool"`
	Summary string `json:"summary"`
	// Task and Call name a confirmation's call (Call is its ID).
	Task string `json:"task,omitempty"`
	Call string `json:"call,omitempty"`
	// Facts are what the call asks, read from its own input: the whole
	// command and its cwd, or the file and a diff.
	Facts
	// Detail is the call in one line (Detail); Name, Project and Branch
	// are the session's, when the request opened.
	Detail  string `json:"detail,omitempty"`
	Name    string `json:"name,omitempty"`
	Project string `json:"project,omitempty"`
	Branch  string `json:"branch,omitempty"`
	// SessionWide says whether the agent can take "allow for this
	// session" (the answer then allows the tool for the rest of it).
	SessionWide bool      `json:"session_wide,omitempty"`
	Opened      time.Time `json:"opened"`
	Answer      *Answer   `json:"answer,omitempty"`
	// Key is the request_key of the session's interaction.input_requested
	// (kept on the owner: it is a digest of the call's input) and Parent
	// the session's parent: where the answer is recorded.
	Key    string `json:"-"`
	Parent string `json:"parent,omitempty"`
}

// Answer is an operator's decision on a request.
type Answer struct {
	Allow bool `json:"allow"`
	// SessionWide allows the tool for the rest of the session too.
	SessionWide bool      `json:"session_wide,omitempty"`
	By          string    `json:"by"`
	Reason      string    `json:"reason,omitempty"`
	At          time.Time `json:"at"`
}

// Place is a request's where: project@branch, or the project alone.
func (r Request) Place() string {
	switch {
	case r.Project != "" && r.Branch != "":
		return r.Project + "@" + r.Branch
	default:
		return r.Project
	}
}

// Handle is how a person names the request's session: its name, or its id.
func (r Request) Handle() string {
	if r.Name != "" {
		return r.Name
	}
	return r.Session
}

// Grant is a task's grant (runtime.Grant), for the command line.
type Grant = runtime.Grant

// Profile returns a named grant profile: read-only, confirm, edit or full.
func Profile(name string) ([]Grant, error) { return runtime.Profile(name) }

// ProfileInfo is a named profile as `harn profiles` prints it.
type ProfileInfo = runtime.ProfileInfo

// Profiles describes the named profiles (runtime.Profiles).
func Profiles() []ProfileInfo { return runtime.Profiles() }

// ProfileToolLabels are the labels of ProfileInfo.Tools' columns.
func ProfileToolLabels() []string {
	out := make([]string, 0, len(runtime.ProfileTools))
	for _, c := range runtime.ProfileTools {
		out = append(out, c.Label)
	}
	return out
}

// RefusedCall is a call the runtime refused (a TaskView's RefusedCalls).
type RefusedCall = runtime.RefusedCall

// MaxRefusedCalls bounds the refused calls a task's view names.
const MaxRefusedCalls = runtime.MaxRefusedCalls

// ParseGrants reads a grants file (`--grants FILE`); see runtime.ParseGrants.
func ParseGrants(b []byte) ([]Grant, error) { return runtime.ParseGrants(b) }

// FormatGrants writes grants in the grants file's line form.
func FormatGrants(gs []Grant) []byte { return runtime.FormatGrants(gs) }

// MaxGrantsFileBytes bounds a grants file.
const MaxGrantsFileBytes = runtime.MaxGrantsFileBytes

// Event is one loop event of a harn session, as OpEvents and OpHistory
// return them (the runtime's LoopEvent, named here for the client).
type Event = runtime.LoopEvent
