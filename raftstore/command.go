package raftstore

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/harn-dev/harn/presence"
)

// CommandVersion is the first byte of every log entry this package writes.
// A replica that reads an entry of another version refuses that entry (every
// replica refuses it the same way, so they stay equal) and logs it.
const CommandVersion byte = 1

// Limits. Oversized input is refused with ErrInvalidCommand, never
// truncated.
const (
	MaxCommandBytes = 1 << 20 // one encoded log entry
	MaxBatch        = 1024    // upserts in one batch, ids in one delete
)

// Op names a command.
type Op string

// Commands.
const (
	// OpUpsert patches one session's record (creating it when absent).
	OpUpsert Op = "upsert"
	// OpBatch applies several upserts in one log entry, in order. It is
	// refused whole when any of them is invalid.
	OpBatch Op = "batch"
	// OpDelete removes records. A later upsert of the same session
	// creates it again (there are no tombstones).
	OpDelete Op = "delete"
)

// Command is one registry log entry.
type Command struct {
	Op Op `json:"op"`
	// Upserts holds exactly one upsert for OpUpsert and 1..MaxBatch for
	// OpBatch.
	Upserts []Upsert `json:"upserts,omitempty"`
	// SessionIDs are the records OpDelete removes.
	SessionIDs []string `json:"session_ids,omitempty"`
	// Claim is the body of OpClaim and OpRelease (claimcmd.go).
	Claim *ClaimCommand `json:"claim,omitempty"`
	// Notify is the webhook of OpNotifySet and OpNotifyRemove (notifycmd.go).
	Notify *NotifyHook `json:"notify,omitempty"`
	// KV holds the key-value writes of OpKV.
	KV []KVOp `json:"kv,omitempty"`
}

// UpsertCommand returns the command that applies u.
func UpsertCommand(u Upsert) Command { return Command{Op: OpUpsert, Upserts: []Upsert{u}} }

// BatchCommand returns the command that applies us in one log entry.
func BatchCommand(us ...Upsert) Command { return Command{Op: OpBatch, Upserts: us} }

// DeleteCommand returns the command that removes the named records.
func DeleteCommand(ids ...string) Command { return Command{Op: OpDelete, SessionIDs: ids} }

// Upsert is a patch of one session's record. Only the groups present
// change, and each group changes only when the upsert's TS is newer than
// the time the group last changed (ties are broken by the group's value, so
// that the result does not depend on the order of application). A group is
// replaced whole: senders send each group complete, from the session's
// folded state.
type Upsert struct {
	SessionID string `json:"session_id"`
	// TS is the event time of what the upsert reports. It is required.
	TS        time.Time       `json:"ts"`
	Identity  *IdentityPatch  `json:"identity,omitempty"`
	Task      *TaskPatch      `json:"task,omitempty"`
	Lifecycle *LifecyclePatch `json:"lifecycle,omitempty"`
	Activity  *ActivityPatch  `json:"activity,omitempty"`
	End       *EndPatch       `json:"end,omitempty"`
}

// IdentityPatch is the session's identity and start.
type IdentityPatch struct {
	ParentSessionID string `json:"parent_session_id,omitempty"`
	Node            string `json:"node,omitempty"`
	Agent           string `json:"agent,omitempty"`
	Name            string `json:"name,omitempty"`
	// StartedAt defaults to the upsert's TS.
	StartedAt time.Time `json:"started_at,omitzero"`
}

// TaskPatch sets the declared task text ("" clears it).
type TaskPatch struct {
	Text string `json:"text"`
}

// LifecyclePatch sets the task state. The record's BlockerReason is Reason
// while blocked and empty otherwise, as in presence.Fold.
type LifecyclePatch struct {
	TaskState string `json:"task_state"`
	Reason    string `json:"reason,omitempty"`
}

// ActivityPatch sets the activity; the record's ActivityAt is the TS.
type ActivityPatch struct {
	Activity string `json:"activity"`
}

// EndPatch ends (or, with Ended false, reopens) the session. The record's
// EndedAt is the TS while ended.
type EndPatch struct {
	Ended  bool   `json:"ended"`
	Reason string `json:"reason,omitempty"`
}

// Validate checks the command. Every error wraps ErrInvalidCommand and
// names the field.
func (c Command) Validate() error {
	if isNotifyOp(c.Op) || c.Notify != nil {
		return c.validateNotify()
	}
	if c.Op != OpKV && len(c.KV) != 0 {
		return invalid("kv", "only op kv carries kv writes")
	}
	switch c.Op {
	case OpKV:
		return c.validateKV()
	case OpUpsert:
		if len(c.Upserts) != 1 || len(c.SessionIDs) != 0 {
			return invalid("upserts", "upsert carries exactly one upsert and no session_ids")
		}
	case OpBatch:
		if len(c.Upserts) == 0 || len(c.Upserts) > MaxBatch || len(c.SessionIDs) != 0 {
			return invalid("upserts", fmt.Sprintf("batch carries 1 to %d upserts and no session_ids", MaxBatch))
		}
	case OpDelete:
		if len(c.SessionIDs) == 0 || len(c.SessionIDs) > MaxBatch || len(c.Upserts) != 0 {
			return invalid("session_ids", fmt.Sprintf("delete carries 1 to %d session_ids and no upserts", MaxBatch))
		}
		for _, id := range c.SessionIDs {
			if err := checkID("session_ids", id); err != nil {
				return err
			}
		}
		return nil
	case OpClaim, OpRelease:
		return c.validateClaim()
	default:
		return invalid("op", fmt.Sprintf("unknown op %q; use upsert, batch, delete or kv", c.Op))
	}
	if c.Claim != nil {
		return invalid("claim", "only claim and release carry a claim body")
	}
	for i := range c.Upserts {
		if err := c.Upserts[i].Validate(); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks one upsert.
func (u *Upsert) Validate() error {
	if err := checkID("session_id", u.SessionID); err != nil {
		return err
	}
	if err := checkTime("ts", u.TS, true); err != nil {
		return err
	}
	if u.Identity == nil && u.Task == nil && u.Lifecycle == nil && u.Activity == nil && u.End == nil {
		return invalid("upsert", "an upsert changes at least one group: identity, task, lifecycle, activity or end")
	}
	if p := u.Identity; p != nil {
		if p.ParentSessionID != "" {
			if err := checkID("identity.parent_session_id", p.ParentSessionID); err != nil {
				return err
			}
		}
		for _, f := range []struct{ name, v string }{
			{"identity.node", p.Node}, {"identity.agent", p.Agent}, {"identity.name", p.Name},
		} {
			if err := checkText(f.name, f.v, presence.MaxAttrStringLen); err != nil {
				return err
			}
		}
		if err := checkTime("identity.started_at", p.StartedAt, false); err != nil {
			return err
		}
	}
	if p := u.Task; p != nil {
		if err := checkText("task.text", p.Text, presence.MaxTaskChars); err != nil {
			return err
		}
	}
	if p := u.Lifecycle; p != nil {
		switch presence.TaskState(p.TaskState) {
		case presence.TaskActive, presence.TaskDone:
		case presence.TaskBlocked:
			if p.Reason == "" {
				return invalid("lifecycle.reason", "blocked requires a reason")
			}
		default:
			return invalid("lifecycle.task_state", fmt.Sprintf("unknown task state %q; use active, blocked or done", p.TaskState))
		}
		if err := checkText("lifecycle.reason", p.Reason, presence.MaxReasonChars); err != nil {
			return err
		}
	}
	if p := u.Activity; p != nil {
		switch presence.Activity(p.Activity) {
		case presence.ActivityUnknown, presence.ActivityWorking, presence.ActivityNeedsInput, presence.ActivityIdle:
		default:
			return invalid("activity.activity", fmt.Sprintf("unknown activity %q; use unknown, working, needs_input or idle", p.Activity))
		}
	}
	if p := u.End; p != nil {
		if err := checkText("end.reason", p.Reason, presence.MaxReasonChars); err != nil {
			return err
		}
	}
	return nil
}

func invalid(field, why string) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalidCommand, field, why)
}

func checkID(field, id string) error {
	if id == "" {
		return invalid(field, "required")
	}
	if len(id) > presence.MaxIDLen {
		return invalid(field, fmt.Sprintf("longer than %d bytes", presence.MaxIDLen))
	}
	return checkText(field, id, presence.MaxIDLen)
}

func checkText(field, v string, maxChars int) error {
	if !utf8.ValidString(v) {
		return invalid(field, "not valid UTF-8")
	}
	if utf8.RuneCountInString(v) > maxChars {
		return invalid(field, fmt.Sprintf("longer than %d characters", maxChars))
	}
	return nil
}

// checkTime keeps times inside what JSON (RFC 3339, years 0..9999) and the
// wire form (int64 nanoseconds) can carry, so that a snapshot can always be
// written.
func checkTime(field string, t time.Time, required bool) error {
	if t.IsZero() {
		if required {
			return invalid(field, "required")
		}
		return nil
	}
	if y := t.Year(); y < 1678 || y > 2261 {
		return invalid(field, "out of range (years 1678 to 2261)")
	}
	return nil
}

// EncodeCommand validates c and returns its log entry: the version byte and
// the JSON of c.
func EncodeCommand(c Command) ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidCommand, err)
	}
	if len(b)+1 > MaxCommandBytes {
		return nil, invalid("command", fmt.Sprintf("encodes to %d bytes, more than %d", len(b)+1, MaxCommandBytes))
	}
	return append([]byte{CommandVersion}, b...), nil
}

// DecodeCommand parses and validates a log entry.
func DecodeCommand(b []byte) (Command, error) {
	if len(b) == 0 {
		return Command{}, fmt.Errorf("%w: empty entry", ErrInvalidCommand)
	}
	if b[0] != CommandVersion {
		return Command{}, fmt.Errorf("%w: entry version %d, this build reads %d", ErrUnsupportedVersion, b[0], CommandVersion)
	}
	var c Command
	if err := json.Unmarshal(b[1:], &c); err != nil {
		return Command{}, fmt.Errorf("%w: %w", ErrInvalidCommand, err)
	}
	if err := c.Validate(); err != nil {
		return Command{}, err
	}
	return c, nil
}
