package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/hookwire"
	"github.com/harn-dev/harn/presence"
)

// defaultLifecycleTimeout bounds how long a lifecycle change waits for
// its registry write.
const defaultLifecycleTimeout = 5 * time.Second

// checkTimeout bounds the read that finds out whether a declaration whose
// answer did not come in time was recorded.
const checkTimeout = 2 * time.Second

// declared is the outcome of a lifecycle change as the CLI reports it.
type declared struct {
	session  presence.State
	recorded bool
	// pending: recorded in the ledger, the registry write not yet made.
	pending bool
	note    string
}

// declare asks the node for a lifecycle change and waits at most timeout.
// A node that acknowledges with a note has recorded the change in its
// ledger and not yet in the registry (pending). A node that does not
// answer in time is asked once more, briefly, whether the change landed:
// if it did, its registry write is what is still pending.
func declare(ctx context.Context, cl *client, p hook.Place, before presence.State, to presence.TaskState, reason string, timeout time.Duration) (declared, error) {
	lctx, cancel := context.WithTimeout(ctx, timeout)
	res, err := cl.api.Lifecycle(lctx, &api.LifecycleRequest{SessionId: before.SessionID, TaskState: string(to), Reason: reason})
	timedOut := lctx.Err() != nil
	cancel()
	if err == nil {
		st, err := decodeState(res.SessionJson)
		if err != nil {
			return declared{}, fmt.Errorf("cli: session from the node: %w", err)
		}
		return declared{session: st, recorded: res.Recorded, pending: res.Recorded && res.Note != "", note: res.Note}, nil
	}
	// A deadline, ours or the node's own bound on the registry write (it
	// answers DeadlineExceeded just before ours expires), means the change
	// may be recorded with its registry write pending: ask the node.
	code := hookwire.CodeOf(err)
	if code != hookwire.DeadlineExceeded && (!timedOut || code != hookwire.Canceled) {
		return declared{}, hook.RpcErr(err, p)
	}
	gctx, gcancel := context.WithTimeout(ctx, checkTimeout)
	defer gcancel()
	g, gerr := cl.api.Get(gctx, &api.SessionRequest{Id: before.SessionID})
	if gerr == nil {
		st, derr := stateOf(g.GetSession())
		if derr == nil && st.TaskState == to && !st.TaskStateUpdatedAt.Equal(before.TaskStateUpdatedAt) {
			return declared{session: st, recorded: true, pending: true,
				note: fmt.Sprintf("recorded in this node's ledger; the registry write is still pending after %s", timeout)}, nil
		}
	}
	return declared{}, hook.WithCode(hook.ExitUnavailable, fmt.Errorf("the node did not answer the lifecycle change within --timeout %s; it may still apply: check with `harn agents status %s`",
		timeout, safe(before.SessionID)))
}
