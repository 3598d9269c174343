package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/tasks/taskapi"
	"github.com/harn-dev/harn/node/tasks/taskwire"
	"github.com/harn-dev/harn/util/text"
)

// ErrBadGrants means --profile or --grants could not be read.
var ErrBadGrants = errors.New("bad grants")

func newTaskCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "task",
		Short: "task runtimes: start, steer, follow up, supersede, cancel and inspect tasks on any node",
		Long: `A task runtime runs one top-level request of a session at a time, with its own
grants, a cancellation barrier and an append-only ledger on the owning node.
Every action works against a session on another node too: it is routed over
the authenticated mesh channel to the node that owns it.`,
		Args: hook.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	c.AddCommand(newTaskStartCmd(),
		newTaskSessionCmd(taskwire.OpSteer, "steer", "add input to the session's running task"),
		newTaskSessionCmd(taskwire.OpFollowUp, "follow-up", "queue a task behind the session's active one"),
		newTaskSessionCmd(taskwire.OpSupersede, "supersede", "cancel the session's task and start this one after its barrier"),
		newTaskIDCmd(taskwire.OpResume, "resume ID", "start a blocked follow-up", 1),
		newTaskIDCmd(taskwire.OpCancel, "cancel ID", "cancel a task (a running one goes through the barrier)", 1),
		newTaskIDCmd(taskwire.OpReplace, "replace ID TEXT", "replace a queued or blocked task with new text", 2),
		newTaskIDCmd(taskwire.OpAck, "ack ID", "acknowledge a task's unknown mutating outcomes, so that mutations may run again", 1),
		newTaskIDCmd(taskwire.OpGrants, "grants ID", "show what a task holds now", 1),
		newTaskIDCmd(taskwire.OpDigest, "digest ID", "show the handoff a task received from its predecessor", 1),
		newTaskIDCmd(taskwire.OpConfirm, "confirm ID CALL", "confirm a call waiting for a confirmation (adds no authority)", 2),
		newTaskIDCmd(taskwire.OpDeny, "deny ID CALL", "deny a call waiting for a confirmation", 2),
		newTaskIDCmd(taskwire.OpShow, "show ID", "show a task: its state, queue, text, recent output and its steps (model calls, tool calls, grant reductions, cancellations)", 1),
		newTaskReduceCmd(),
		newTaskContextCmd(taskwire.OpPin, "pin --session ID TEXT",
			"pin a text into a harn session's context: every request carries it (while a task runs: from its next step)"),
		newTaskContextCmd(taskwire.OpCompact, "compact --session ID",
			"compact a harn session's context now (while a task runs: at its next step), whatever its budget line"),
	)
	return c
}

// newTaskContextCmd is task pin and task compact: an operator's change of
// a harn session's context, which the node applies at a step boundary
// (never inside a tool exchange).
func newTaskContextCmd(op, use, short string) *cobra.Command {
	nargs := cobra.NoArgs
	if op == taskwire.OpPin {
		nargs = cobra.MinimumNArgs(1)
	}
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  nargs,
		RunE: func(c *cobra.Command, args []string) error {
			a := taskwire.Action{Op: op, Text: strings.Join(args, " ")}
			a.Session, _ = c.Flags().GetString("session")
			if a.Session == "" {
				a.Session = os.Getenv("HARN_SESSION")
			}
			if a.Session == "" {
				return hook.UsageErr(fmt.Errorf("task %s: name the session with --session ID", op))
			}
			return runTask(c, a)
		},
	}
	c.Flags().String("session", "", "the harn session (id, prefix or name; default HARN_SESSION)")
	addTaskFlags(c)
	return c
}

func addTaskFlags(c *cobra.Command) {
	c.Flags().String("node", "", "the node that owns the session or task (default: found through the mesh)")
	hook.AddJSONFlag(c)
}

func addGrantFlags(c *cobra.Command) {
	c.Flags().String("profile", "", "grants from a named profile: read-only, confirm, edit or full (harn profiles lists them); default: the session's, "+
		"else confirm for harn's own agent and read-only for another agent's session")
	c.Flags().String("grants", "", "grants from a `file` (JSON, or one LEVEL CAPABILITY[(PATTERN)] [confirm] a line)")
}

// grantsOf reads --profile and --grants; nil means the node's default.
func grantsOf(c *cobra.Command) ([]taskwire.Grant, error) {
	prof, _ := c.Flags().GetString("profile")
	file, _ := c.Flags().GetString("grants")
	var out []taskwire.Grant
	if prof != "" {
		g, err := taskwire.Profile(prof)
		if err != nil {
			return nil, hook.UsageErr(fmt.Errorf("%w: --profile %q: use read-only, confirm, edit or full (harn profiles says what each allows)", ErrBadGrants, prof))
		}
		out = append(out, g...)
	}
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return nil, hook.UsageErr(fmt.Errorf("%w: --grants: %w", ErrBadGrants, err))
		}
		b, err := io.ReadAll(io.LimitReader(f, taskwire.MaxGrantsFileBytes+1))
		f.Close()
		if err != nil {
			return nil, hook.UsageErr(fmt.Errorf("%w: --grants: %w", ErrBadGrants, err))
		}
		g, err := taskwire.ParseGrants(b)
		if err != nil {
			return nil, hook.UsageErr(fmt.Errorf("%w: --grants %s: %w", ErrBadGrants, file, err))
		}
		out = append(out, g...)
	}
	return out, nil
}

func newTaskStartCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "start TEXT",
		Short: "start a task: in a new session running --launcher NAME or --exec COMMAND, or on an existing session (--session)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			a := taskwire.Action{Op: taskwire.OpStart, Text: strings.Join(args, " ")}
			a.Command, _ = c.Flags().GetString("exec")
			a.Launcher, _ = c.Flags().GetString("launcher")
			a.Session, _ = c.Flags().GetString("session")
			a.Workdir, _ = c.Flags().GetString("workdir")
			a.Agent, _ = c.Flags().GetString("agent")
			given := 0
			for _, v := range []string{a.Command, a.Launcher, a.Session, a.Agent} {
				if v != "" {
					given++
				}
			}
			if given != 1 {
				return hook.UsageErr(errors.New("task start: give --launcher NAME, --exec 'COMMAND' or --agent harn for a new session, or --session ID for an existing one"))
			}
			if a.Agent != "" {
				if a.Agent != taskwire.AgentHarn {
					return hook.UsageErr(fmt.Errorf("task start: --agent %q; the only built-in agent is harn", a.Agent))
				}
				var err error
				if a.Harn, err = harnOptions(c); err != nil {
					return err
				}
			}
			if (a.Command != "" || a.Launcher != "" || a.Agent != "") && a.Workdir == "" {
				if node, _ := c.Flags().GetString("node"); node == "" {
					a.Workdir, _ = os.Getwd()
				}
			}
			g, err := grantsOf(c)
			if err != nil {
				return err
			}
			a.Grants = g
			return runTask(c, a)
		},
	}
	c.Flags().String("exec", "", "the agent command the new session runs for its tasks (no shell; the prompt goes on stdin; this node only: another node never runs a command it is sent)")
	c.Flags().String("launcher", "", "the new session runs the node's launcher NAME (its fixed argv; with --node, one the target lists in --remote-exec)")
	hook.CommandLineOnly(c, "launcher") // task start's --launcher shares its name with the node's definitions
	c.Flags().String("session", "", "start the task on this existing session (id, prefix or name)")
	c.Flags().String("agent", "", "the new session runs harn's own agent loop (harn); see harn ask for its flags")
	addHarnFlags(c)
	c.Flags().String("workdir", "", "the new session's working directory on its node (default: here, for this node)")
	addGrantFlags(c)
	addTaskFlags(c)
	return c
}

func newTaskSessionCmd(op, name, short string) *cobra.Command {
	c := &cobra.Command{
		Use:   name + " --session ID TEXT",
		Short: short,
		Args:  cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			a := taskwire.Action{Op: op, Text: strings.Join(args, " ")}
			a.Session, _ = c.Flags().GetString("session")
			if a.Session == "" {
				a.Session = os.Getenv("HARN_SESSION")
			}
			if a.Session == "" {
				return hook.UsageErr(fmt.Errorf("task %s: name the session with --session ID", name))
			}
			if op != taskwire.OpSteer {
				g, err := grantsOf(c)
				if err != nil {
					return err
				}
				a.Grants = g
			}
			if op == taskwire.OpFollowUp {
				a.RequiresSuccess, _ = c.Flags().GetBool("requires-success")
			}
			if op == taskwire.OpSteer {
				a.Task, _ = c.Flags().GetString("task")
			}
			return runTask(c, a)
		},
	}
	c.Flags().String("session", "", "the session (id, prefix or name; default HARN_SESSION)")
	if op != taskwire.OpSteer {
		addGrantFlags(c)
	} else {
		c.Flags().String("task", "", "the turn (task id) this steer is for; when that turn has ended, the steer becomes a follow-up and says so")
	}
	if op == taskwire.OpFollowUp {
		c.Flags().Bool("requires-success", false, "stay blocked after a failed, cancelled or superseded predecessor until resume, cancel or replace")
	}
	addTaskFlags(c)
	return c
}

func newTaskIDCmd(op, use, short string, nargs int) *cobra.Command {
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(nargs),
		RunE: func(c *cobra.Command, args []string) error {
			a := taskwire.Action{Op: op, Task: args[0]}
			switch op {
			case taskwire.OpReplace:
				a.Text = args[1]
			case taskwire.OpConfirm, taskwire.OpDeny:
				a.Call = args[1]
			}
			if f := c.Flags().Lookup("reason"); f != nil {
				a.Reason = f.Value.String()
			}
			return runTask(c, a)
		},
	}
	if op == taskwire.OpDeny || op == taskwire.OpCancel {
		c.Flags().String("reason", "", "why (recorded in the ledger)")
	}
	addTaskFlags(c)
	return c
}

// runTask sends an action to the local node, which runs it or routes it.
func runTask(c *cobra.Command, a taskwire.Action) error {
	node, _ := c.Flags().GetString("node")
	return withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
		res, err := cl.api.Task(ctx, &api.TaskRequest{Action: taskapi.ActionToAPI(a), Node: node})
		if err != nil {
			return taskErr(err, p)
		}
		r, err := taskapi.ResultFromAPI(res.Result)
		if err != nil {
			return err
		}
		if hook.AsJSON(c) {
			return hook.WriteSortedJSON(c, r)
		}
		printTaskResult(c.OutOrStdout(), a.Op, r)
		return nil
	})
}

// taskErr maps a task action's status to its exit code: a runtime rule's
// refusal is ExitTaskRefused, remote control refused ExitRemoteRefused.
func taskErr(err error, p hook.Place) error {
	var se *api.StatusError
	if errors.As(err, &se) {
		switch {
		case errors.Is(err, api.ErrRefused):
			return hook.WithCode(hook.ExitTaskRefused, errors.New(text.OneLine(se.Message())))
		case errors.Is(err, api.ErrPermission):
			return hook.WithCode(hook.ExitRemoteRefused, errors.New(text.OneLine(se.Message())))
		}
	}
	return hook.RpcErr(err, p)
}

func printTaskResult(w io.Writer, op string, r taskwire.Result) {
	if op == taskwire.OpStart && r.Session != "" {
		fmt.Fprintf(w, "session %s on %s\n", text.Sanitize(r.Session), text.Sanitize(r.Node))
	}
	if r.Task != nil {
		t := r.Task
		line := fmt.Sprintf("task %s  %s", t.ID, t.State)
		switch {
		case t.State == "interrupted" && t.Reason != "": // runtime.StateInterrupted
			line += " (" + strings.ReplaceAll(t.Reason, "_", " ") + ")" // interrupted (node restart)
		case t.Status != "":
			line += " (" + string(t.Status) + ")"
		}
		line += fmt.Sprintf("  queue %d", t.QueueDepth)
		if t.Position > 0 {
			line += fmt.Sprintf("  position %d", t.Position)
		}
		if len(t.PendingCalls) > 0 {
			line += "  waiting: " + strings.Join(t.PendingCalls, ", ")
		}
		fmt.Fprintln(w, text.Sanitize(line))
		if t.Refused > 0 {
			// the outcome's note: it did not do all it was asked
			fmt.Fprintf(w, "refused: %s: %s\n", countOf(t.Refused, "call", "calls"), refusedList(t.RefusedCalls, t.Refused))
		}
	}
	if r.Message != "" {
		fmt.Fprintln(w, text.OneLine(r.Message))
	}
	if r.Interrupt != "" {
		fmt.Fprintln(w, "interrupt:", text.OneLine(r.Interrupt))
	}
	switch op {
	case taskwire.OpShow:
		if r.Task != nil && r.Task.By != "" {
			fmt.Fprintln(w, "by:", text.OneLine(r.Task.By))
		}
		if r.Text != "" {
			fmt.Fprintln(w, "text:", text.OneLine(r.Text))
		}
		if r.View != nil && len(r.View.AwaitingAck) > 0 {
			fmt.Fprintln(w, "awaiting ack:", text.Sanitize(strings.Join(r.View.AwaitingAck, ", ")))
		}
		for _, o := range r.Output {
			fmt.Fprintln(w, "  │ "+text.OneLine(o))
		}
		writeSteps(w, r.Steps, r.StepsOmitted)
	case taskwire.OpGrants:
		if r.Grants != nil {
			for _, l := range strings.Split(strings.TrimSpace(string(taskwire.FormatGrants(r.Grants.Grants))), "\n") {
				fmt.Fprintln(w, text.OneLine(l))
			}
			for _, l := range r.Grants.Limits {
				fmt.Fprintf(w, "limit %s %s\n", text.Sanitize(l.Capability), l.Level)
			}
		}
	case taskwire.OpDigest:
		if d := r.Digest; d != nil {
			fmt.Fprintf(w, "conversation: %d messages\n", len(d.Conversation))
			if d.PredecessorFinal != "" {
				fmt.Fprintln(w, "predecessor's final message:", text.Clip(text.OneLine(d.PredecessorFinal), 200))
			}
			if g := d.Digest; g != nil {
				fmt.Fprintf(w, "predecessor %s: %s; calls started %d, succeeded %d, failed %d, aborted %d, unknown %d, refused %d, denied %d\n",
					text.Sanitize(g.Predecessor), g.Status, g.Calls.Started, g.Calls.Succeeded, g.Calls.Failed,
					g.Calls.Aborted, g.Calls.Unknown, g.Calls.Refused, g.Calls.Denied)
				for _, cc := range g.Capabilities {
					fmt.Fprintf(w, "  %s: %d\n", text.Sanitize(cc.Name), cc.Calls)
				}
			}
		}
	}
}
