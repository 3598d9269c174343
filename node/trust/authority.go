package trust

import (
	"fmt"
	"sort"
	"strings"
)

// WriteKind says what a registry write is for.
type WriteKind int

const (
	// WriteOwned is a write of a session's own record (start, task,
	// lifecycle, activity, end): only the owning node may make it.
	WriteOwned WriteKind = iota
	// WriteHousekeeping is a write a server makes about sessions it does
	// not own (the reaper's end of an unreachable node's session, the
	// removal of records of a removed node).
	WriteHousekeeping
)

func (k WriteKind) String() string {
	if k == WriteHousekeeping {
		return "housekeeping"
	}
	return "owned"
}

// MayWriteSession decides whether caller may make a write of kind to a
// session owned by the node named owner: a node only its own sessions; a
// server also housekeeping writes to any session.
func MayWriteSession(caller Identity, owner string, kind WriteKind) bool {
	if caller.Name == "" {
		return false
	}
	switch kind {
	case WriteOwned:
		return owner != "" && caller.Name == owner
	case WriteHousekeeping:
		return caller.Role == RoleServer
	}
	return false
}

// CheckSessionWrite is MayWriteSession with an error that names the
// caller's certificate (for the caller's error and the target's log).
func CheckSessionWrite(caller Identity, owner string, kind WriteKind) error {
	if MayWriteSession(caller, owner, kind) {
		return nil
	}
	detail := fmt.Sprintf("the session belongs to node %q", clipName(owner))
	if kind == WriteHousekeeping {
		detail = "housekeeping writes need the server role"
	}
	return &RefusalError{Caller: caller, Err: ErrNotOwner, Detail: detail}
}

// RemoteControl is a node's --remote-control policy: who may start, steer,
// cancel or confirm its agents from another node.
type RemoteControl struct {
	mode  string // "off", "mesh" or "list"
	nodes map[string]bool
}

// DefaultRemoteControl is "mesh".
const DefaultRemoteControl = "mesh"

// ParseRemoteControl reads `off`, `mesh` (the default, also for "") or a
// comma-separated list of node names.
func ParseRemoteControl(s string) (RemoteControl, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "", "mesh":
		return RemoteControl{mode: "mesh"}, nil
	case "off":
		return RemoteControl{mode: "off"}, nil
	}
	rc := RemoteControl{mode: "list", nodes: map[string]bool{}}
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		if n == "off" || n == "mesh" {
			return RemoteControl{}, fmt.Errorf("%w: %q cannot be combined with node names (use off, mesh, or NODE,...)", ErrBadPolicy, n)
		}
		if err := ValidName(n); err != nil {
			return RemoteControl{}, fmt.Errorf("%w: --remote-control: %w", ErrBadPolicy, err)
		}
		rc.nodes[n] = true
	}
	return rc, nil
}

// String renders the policy as it parses.
func (rc RemoteControl) String() string {
	switch rc.mode {
	case "off":
		return "off"
	case "list":
		names := make([]string, 0, len(rc.nodes))
		for n := range rc.nodes {
			names = append(names, n)
		}
		sort.Strings(names)
		return strings.Join(names, ",")
	}
	return "mesh"
}

// Allow decides whether caller (a verified mesh identity) may act on this
// node's agents. A refusal is a *RefusalError wrapping ErrRemoteControl
// that names the caller's certificate and the policy.
func (rc RemoteControl) Allow(caller Identity) error {
	if caller.Name == "" {
		return &RefusalError{Caller: caller, Err: ErrRemoteControl, Detail: "remote control needs a mesh certificate"}
	}
	switch rc.mode {
	case "off":
		return &RefusalError{Caller: caller, Err: ErrRemoteControl, Detail: "this node's policy is --remote-control off"}
	case "list":
		if rc.nodes[caller.Name] {
			return nil
		}
		return &RefusalError{Caller: caller, Err: ErrRemoteControl, Detail: "this node allows only --remote-control " + rc.String()}
	}
	return nil // mesh (also the zero value)
}
