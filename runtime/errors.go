package runtime

import (
	"errors"
	"fmt"
	"time"
)

// Sentinels. Match them with errors.Is; the typed errors below wrap them.
var (
	ErrNoSession      = errors.New("runtime: no such session; open it first")
	ErrSessionExists  = errors.New("runtime: session already open")
	ErrTaskExists     = errors.New("runtime: the task is already known; restore it only once")
	ErrNoTask         = errors.New("runtime: no such task")
	ErrTaskActive     = errors.New("runtime: a task is already active in this session; use steer, follow-up or supersede")
	ErrNoActiveTask   = errors.New("runtime: no active task in this session; use start")
	ErrTaskCancelling = errors.New("runtime: the task is being cancelled; it takes no new input or calls")
	ErrTaskNotRunning = errors.New("runtime: the task is not running")
	ErrTaskTerminal   = errors.New("runtime: the task has ended")
	ErrNotBlocked     = errors.New("runtime: the task is not blocked")
	ErrNotReplaceable = errors.New("runtime: only a queued or blocked task can be replaced")
	ErrEmptyText      = errors.New("runtime: the text is empty; give the task's input")
	ErrTooLarge       = errors.New("runtime: input too large")
	ErrBadConfig      = errors.New("runtime: bad configuration")
	ErrNothingToAck   = errors.New("runtime: the task has no unknown mutating outcome to acknowledge")

	// Call lifecycle.
	ErrNoCall          = errors.New("runtime: no such call in this task")
	ErrDuplicateCall   = errors.New("runtime: a call with this id already exists in the task")
	ErrCallSettled     = errors.New("runtime: the call has already settled")
	ErrNotPending      = errors.New("runtime: the call is not waiting for a confirmation")
	ErrAlreadyAnswered = errors.New("runtime: the call was already answered")
	ErrDenied          = errors.New("runtime: the call was denied")

	// Pre-call checks, one per check (see Check).
	ErrUnknownCapability = errors.New("runtime: the capability is not in the task's catalog snapshot")
	ErrRevoked           = errors.New("runtime: the capability is revoked globally")
	ErrGeneration        = errors.New("runtime: the call names another catalog generation than the task's snapshot")
	ErrContractHash      = errors.New("runtime: the call's contract hash differs from the task's snapshot")
	ErrUnbound           = errors.New("runtime: the capability has no provider binding in the task's snapshot")
	ErrProviderDisabled  = errors.New("runtime: the capability's provider is disabled")
	ErrNotLoaded         = errors.New("runtime: the tool's schema is not loaded in this task")
	ErrNotGranted        = errors.New("runtime: the task's grants do not allow this")
	ErrProtectedPath     = errors.New("runtime: a protected path opens only to a grant naming it with confirm")
	ErrAwaitingAck       = errors.New("runtime: a mutating call ended with an unknown outcome; new mutations wait for an acknowledgement (ack)")
	ErrWrongKind         = errors.New("runtime: the capability is of another kind")

	// Grants and admission.
	ErrCeilingGrows = errors.New("runtime: a task's grant ceiling can shrink, never grow")
	ErrNotAdmitted  = errors.New("runtime: the item does not fit the input budget")
	ErrGrantSyntax  = errors.New("runtime: bad grant")
	ErrNoProfile    = errors.New("runtime: no such grant profile; use read-only, edit or full")

	// Ledger.
	ErrNoKey         = errors.New("runtime: no digest key")
	ErrRecordVersion = errors.New("runtime: unknown ledger record version")
	ErrBadRecord     = errors.New("runtime: malformed ledger record")
	ErrLedger        = errors.New("runtime: ledger append failed; nothing was changed")
)

// Check names one pre-call check.
type Check string

// The pre-call checks, in the order Check runs them.
const (
	CheckTask       Check = "task"
	CheckCatalog    Check = "catalog"
	CheckRevocation Check = "revocation"
	CheckGeneration Check = "generation"
	CheckContract   Check = "contract_hash"
	CheckBinding    Check = "provider_binding"
	CheckProvider   Check = "provider_enabled"
	CheckKind       Check = "kind"
	CheckGrant      Check = "grant"
	CheckProtected  Check = "protected_path"
	CheckLoad       Check = "load_state"
	CheckAck        Check = "ack"
)

// RefusalError says which check refused a call, on which capability, and
// why. It unwraps to the check's sentinel (ErrRevoked, ErrNotGranted, …).
type RefusalError struct {
	Check      Check
	Capability string
	Detail     string
	Err        error
}

func (e *RefusalError) Error() string {
	s := fmt.Sprintf("runtime: call to %q refused by the %s check", e.Capability, e.Check)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

func (e *RefusalError) Unwrap() error { return e.Err }

func refuse(c Check, capName string, err error, format string, args ...any) *RefusalError {
	return &RefusalError{Check: c, Capability: capName, Detail: fmt.Sprintf(format, args...), Err: err}
}

// AdmissionError answers an item that does not fit: its estimated need, the
// tokens already active, the minimal base, the safety margin and the
// ceiling, all in tokens. It unwraps to ErrNotAdmitted.
type AdmissionError struct {
	Item    string
	Need    int
	Active  int
	Base    int
	Margin  int
	Ceiling int
}

func (e *AdmissionError) Error() string {
	return fmt.Sprintf("runtime: %q needs %d tokens; active %d + base %d + margin %d leaves %d under the ceiling of %d",
		e.Item, e.Need, e.Active, e.Base, e.Margin, max(0, e.Ceiling-e.Active-e.Base-e.Margin), e.Ceiling)
}

func (e *AdmissionError) Unwrap() error { return ErrNotAdmitted }

// AnswerError refuses a second answer to a confirmation and names the first.
type AnswerError struct {
	Call      string
	Confirmed bool // the first answer: true confirmed, false denied
	By        string
	At        time.Time
	Reason    string
}

func (e *AnswerError) Error() string {
	what := "denied"
	if e.Confirmed {
		what = "confirmed"
	}
	s := fmt.Sprintf("runtime: call %s was already %s", e.Call, what)
	if e.By != "" {
		s += " by " + e.By
	}
	return s + " at " + e.At.UTC().Format(time.RFC3339)
}

func (e *AnswerError) Unwrap() error { return ErrAlreadyAnswered }

// DeniedError is what a pending call's Wait returns after Deny (or when the
// task is cancelled while the call waits).
type DeniedError struct {
	Call   string
	By     string
	Reason string
}

func (e *DeniedError) Error() string {
	s := "runtime: call " + e.Call + " denied"
	if e.By != "" {
		s += " by " + e.By
	}
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

func (e *DeniedError) Unwrap() error { return ErrDenied }

// AckRequiredError refuses a mutation while a mutating call of an earlier
// task has an unknown outcome. It names that task and call; `Ack(Task)`
// releases the hold.
type AckRequiredError struct {
	Task       string
	Call       string
	Capability string
}

func (e *AckRequiredError) Error() string {
	return fmt.Sprintf("runtime: call %s (%s) of task %s ended with an unknown outcome; new mutations wait for `harn task ack %s`",
		e.Call, e.Capability, e.Task, e.Task)
}

func (e *AckRequiredError) Unwrap() error { return ErrAwaitingAck }

// CeilingError refuses a reduction that would raise a capability's level.
type CeilingError struct {
	Capability string
	Held       Level
	Asked      Level
}

func (e *CeilingError) Error() string {
	return fmt.Sprintf("runtime: %q holds %s; %s would raise the ceiling, which can only shrink", e.Capability, e.Held, e.Asked)
}

func (e *CeilingError) Unwrap() error { return ErrCeilingGrows }
