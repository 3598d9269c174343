package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/util/text"
)

// addWaitCmd adds `wait` under `agents`.
func addWaitCmd(agents *cobra.Command) { agents.AddCommand(newWaitCmd()) }

// errWaitTimeout: the state did not come within --timeout.
var errWaitTimeout = errors.New("cli: timed out")

func newWaitCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "wait [ID|--any] --for needs_input|idle|done|blocked",
		Short: "block until a session (or any) is in a state, print it and exit 0; exit 14 on --timeout",
		Args: func(c *cobra.Command, args []string) error {
			anyS, _ := c.Flags().GetBool("any")
			switch {
			case len(args) > 1:
				return hook.UsageErr(fmt.Errorf("%s takes one session id, name or prefix; got %d arguments", c.CommandPath(), len(args)))
			case anyS && len(args) == 1:
				return hook.UsageErr(fmt.Errorf("%s takes a session id or --any, not both", c.CommandPath()))
			case !anyS && len(args) == 0:
				return hook.UsageErr(fmt.Errorf("%s needs a session id, name or prefix, or --any", c.CommandPath()))
			}
			return nil
		},
		RunE: runWait,
	}
	c.Flags().Bool("any", false, "wait for any live session on any node")
	c.Flags().String("for", "", "the state to wait for: needs_input, idle, done or blocked (required)")
	c.Flags().Duration("timeout", 0, "give up after this long and exit 14 (0: wait until interrupted)")
	hook.AddJSONFlag(c)
	return c
}

func runWait(c *cobra.Command, args []string) error {
	anyS, _ := c.Flags().GetBool("any")
	state, _ := c.Flags().GetString("for")
	timeout, _ := c.Flags().GetDuration("timeout")
	if timeout < 0 {
		return hook.UsageErr(fmt.Errorf("--timeout %v: give a positive duration, or 0 to wait until interrupted", timeout))
	}
	req := &api.WaitRequest{Any: anyS, For: state, TimeoutMs: timeout.Milliseconds()}
	if timeout > 0 && req.TimeoutMs == 0 {
		req.TimeoutMs = 1
	}
	if len(args) == 1 {
		req.Id = args[0]
	}
	p := hook.PlaceOf(c)
	cl, err := connect(c.Context(), p, 5*time.Second)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithCancel(context.Background())
	if timeout > 0 {
		// The node ends the wait at the timeout; the slack covers the
		// call itself.
		ctx, cancel = context.WithTimeout(context.Background(), timeout+10*time.Second)
	}
	defer cancel()
	res, err := cl.api.Wait(ctx, req)
	if err != nil {
		return hook.RpcErr(err, p)
	}
	what := "session " + text.Sanitize(req.Id)
	if anyS {
		what = "any session"
	}
	if res.TimedOut {
		return hook.WithCode(hook.ExitWaitTimeout, fmt.Errorf("%w after %v waiting for %s to be %s (exit %d)",
			errWaitTimeout, timeout, what, text.Sanitize(state), hook.ExitWaitTimeout))
	}
	row, err := api.UnmarshalRowJSON(res.SessionJson)
	if err != nil {
		return fmt.Errorf("cli: session from the node: %w", err)
	}
	r, err := newRosterRow(row)
	if err != nil {
		return fmt.Errorf("cli: session from the node: %w", err)
	}
	w := bufio.NewWriter(c.OutOrStdout())
	if hook.AsJSON(c) {
		if err := r.writeJSON(w); err != nil {
			return err
		}
		w.WriteByte('\n')
		return w.Flush()
	}
	line := fmt.Sprintf("%s %s %s on %s: %s, %s", text.Cell(r.SessionId), text.Cell(orDash(r.Name)), text.Cell(orDash(r.Agent)),
		text.Cell(orDash(r.Node)), text.Cell(r.Activity), text.Cell(r.TaskState))
	if r.BlockerReason != "" {
		line += " (" + text.Clip(text.OneLine(r.BlockerReason), 80) + ")"
	} else if r.WaitingOn != "" {
		line += " (" + text.Clip(text.OneLine(r.WaitingOn), 80) + ")"
	}
	fmt.Fprintln(w, line)
	return w.Flush()
}
