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
// cancel, approve or confirm its agents from another node. The zero value
// is "off".
type RemoteControl struct {
	servers bool            // callers holding a server-role certificate
	nodes   map[string]bool // callers by certificate name
}

// DefaultRemoteControl is "off": no other node acts on this node's agents
// until the operator names who may.
const DefaultRemoteControl = "off"

// RoleServers is the policy entry that allows every caller holding a
// server-role mesh certificate.
const RoleServers = "servers"

// ParseRemoteControl reads `off` (the default, also for ""), or a
// comma-separated list of node names and the role `servers`. The old value
// `mesh` (any mesh certificate) is refused with ErrPolicyMesh.
func ParseRemoteControl(s string) (RemoteControl, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "", "off":
		return RemoteControl{}, nil
	}
	rc := RemoteControl{nodes: map[string]bool{}}
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		switch n {
		case "mesh":
			return RemoteControl{}, fmt.Errorf("%w: %w (it let any mesh certificate act here); name the callers instead: --remote-control NODE,... or servers", ErrBadPolicy, ErrPolicyMesh)
		case "off":
			return RemoteControl{}, fmt.Errorf("%w: off cannot be combined with other entries (use off, servers, or NODE,...)", ErrBadPolicy)
		case RoleServers:
			rc.servers = true
			continue
		}
		if err := ValidName(n); err != nil {
			return RemoteControl{}, fmt.Errorf("%w: --remote-control: %w", ErrBadPolicy, err)
		}
		rc.nodes[n] = true
	}
	return rc, nil
}

// Off reports whether the policy allows no caller.
func (rc RemoteControl) Off() bool { return !rc.servers && len(rc.nodes) == 0 }

// String renders the policy as it parses.
func (rc RemoteControl) String() string {
	if rc.Off() {
		return "off"
	}
	names := make([]string, 0, len(rc.nodes)+1)
	for n := range rc.nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	if rc.servers {
		names = append([]string{RoleServers}, names...)
	}
	return strings.Join(names, ",")
}

// Allow decides whether caller (a verified mesh identity) may act on this
// node's agents. A refusal is a *RefusalError wrapping ErrRemoteControl
// that names the caller's certificate and the policy.
func (rc RemoteControl) Allow(caller Identity) error {
	if caller.Name == "" {
		return &RefusalError{Caller: caller, Err: ErrRemoteControl, Detail: "remote control needs a mesh certificate"}
	}
	switch {
	case rc.Off():
		return &RefusalError{Caller: caller, Err: ErrRemoteControl,
			Detail: "this node's policy is --remote-control off; its operator may allow callers with --remote-control NODE,... or servers"}
	case rc.nodes[caller.Name], rc.servers && caller.Role == RoleServer:
		return nil
	}
	return &RefusalError{Caller: caller, Err: ErrRemoteControl, Detail: "this node allows only --remote-control " + rc.String()}
}
