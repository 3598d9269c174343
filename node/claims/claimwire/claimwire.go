// Package claimwire is the wire half of the claims room (node/claims): a
// claim request and its verdict, the modes, phases and decisions, the
// bound on paths, and a repository's identity for claims. It is light so
// that the client (hooks, git hooks, `harn release-claim`) links it
// without the registry.
package claimwire

import (
	"errors"
	"fmt"
	"strings"
)

// MaxPaths bounds the paths of one claim, release or check (the
// registry's bound, raftstore.MaxClaimPaths; package claims checks that
// the two agree when it compiles).
const MaxPaths = 256

// Mode is how a node acts on claims.
type Mode string

// Modes.
const (
	ModeOff     Mode = "off"     // no checks, no claims
	ModeWarn    Mode = "warn"    // the agent is told of a held file but not stopped
	ModeEnforce Mode = "enforce" // a write to a file held by another session is denied
)

// ErrBadMode is a --claims value that is not a mode.
var ErrBadMode = errors.New("claims: unknown mode")

// ParseMode reads a --claims value; "" is the default, enforce.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case "":
		return ModeEnforce, nil
	case ModeOff, ModeWarn, ModeEnforce:
		return m, nil
	}
	return "", fmt.Errorf("%w %q: use off, warn or enforce", ErrBadMode, s)
}

// Decisions.
const (
	DecideNone  = "none"  // nothing to decide (no paths, claims off)
	DecideAllow = "allow" // free, or this session's: claimed for it
	DecideWarn  = "warn"  // held by another session; the agent is told, not stopped
	DecideDeny  = "deny"  // held by another session; the write is refused
)

// Phases of a request.
const (
	PhasePre  = "pre"  // before the write: may deny
	PhasePost = "post" // after it (Cursor's afterFileEdit): claims, warns at most
)

// Request asks about one write of a session.
type Request struct {
	Session string   `json:"session"`
	Repo    string   `json:"repo"`
	Paths   []string `json:"paths"`
	Phase   string   `json:"phase,omitempty"`
	// Abs are the hook's absolute paths, one per path (as the session's
	// row lists them); the row is told of each one's fate.
	Abs []string `json:"abs,omitempty"`
	// Call is the tool call the write belongs to (set by the node from
	// the hook's query): a denial or a failure of that call releases
	// what it took.
	Call CallRef `json:"-"`
}

// CallRef names one tool call of a session.
type CallRef struct {
	// ID is the agent's own id for the call (Claude Code's tool_use_id);
	// "" when the agent sends none.
	ID string
	// Tool and Digest (CallDigest of the tool and its input) match a
	// call when the event names no ID (a PermissionRequest).
	Tool   string
	Digest string
}

// Verdict answers a Request. Diagnostic, when set, is for the node's
// diagnostics (the claim could not be recorded in time).
type Verdict struct {
	Decision   string `json:"decision"`
	Reason     string `json:"reason,omitempty"`
	Diagnostic string `json:"diagnostic,omitempty"`
	// Holders are the conflicting claims.
	Holders []Holder `json:"holders,omitempty"`
}

// Holder describes the session that holds a claim.
type Holder struct {
	Path        string `json:"path"`
	Session     string `json:"session"`
	Name        string `json:"name,omitempty"`
	Agent       string `json:"agent,omitempty"`
	Task        string `json:"task,omitempty"`
	Node        string `json:"node,omitempty"`
	Unreachable bool   `json:"unreachable,omitempty"`
	// Ended: the holder's session has ended (its end may not have
	// reached the registry yet); its claims are released on sight.
	Ended bool `json:"-"`
}
