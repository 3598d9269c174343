package declare

import (
	"errors"
	"fmt"
	"os"

	"github.com/harn-dev/harn/node/operator"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/procinfo"
)

// Caller refusals of a lifecycle declaration.
var (
	// ErrHarnRun: the caller runs inside a process this node started (an
	// --exec or --launcher session's agent, a workflow child).
	ErrHarnRun = errors.New("only top-level human-facing sessions may declare lifecycle; this command runs inside a process harn started (an --exec session's agent or a workflow child); the operator declares for it from a shell on this node")
	// ErrNotOwnSession: the caller runs inside another session's agent.
	ErrNotOwnSession = errors.New("a session may declare only its own lifecycle")
)

// maxCallerDepth bounds the walk up a caller's process tree.
const maxCallerDepth = 32

// Caller is who asks for a lifecycle declaration: the process at the other
// end of the local socket. PID 0 is a caller the node cannot see (an
// in-process call, or a system that does not tell a socket peer's pid);
// only the target's own rules then apply.
type Caller struct{ PID int }

// checkCaller applies the caller rules of a lifecycle declaration for the
// session target, from the caller's process tree as this node reads it
// (never as the caller reports it):
//   - a caller below this node's own process runs inside something harn
//     started (an --exec or --launcher agent, a workflow child): refused,
//     as a subagent is;
//   - a caller inside a live session's agent process may declare only for
//     a session of that same process (its own);
//   - a caller inside no agent's process tree is an operator on this node:
//     accepted.
//
// A subagent shares its parent's process, so it cannot be told apart from
// its parent by the tree; the subagent rule on the target (and whoami,
// which resolves a subagent to itself) covers it.
func (d *Declarer) checkCaller(c Caller, target presence.State) error {
	if c.PID <= 0 {
		return nil
	}
	anc, err := procinfo.Ancestry(c.PID, maxCallerDepth)
	if err != nil || len(anc) == 0 {
		return nil // the caller has gone: nothing to read
	}
	self := os.Getpid()
	for _, p := range anc {
		if p.PID == self {
			return &operator.RefusedError{Check: "top_level_only", Err: ErrHarnRun}
		}
	}
	live := d.Sessions.Live()
	for _, p := range anc {
		var hosted []string
		own := false
		for i := range live {
			s := &live[i]
			if s.AgentPID != p.PID || (p.Start != 0 && s.AgentPIDStart != 0 && s.AgentPIDStart != p.Start) {
				continue
			}
			hosted = append(hosted, s.SessionID)
			own = own || s.SessionID == target.SessionID
		}
		if len(hosted) == 0 {
			continue
		}
		if own {
			return nil
		}
		return &operator.RefusedError{Check: "own_session", Err: fmt.Errorf("%w: this command runs inside session %s's agent (pid %d), not %s's",
			ErrNotOwnSession, hosted[0], p.PID, target.SessionID)}
	}
	return nil
}
