package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/presence/adapter/all"
	"github.com/harn-dev/harn/util/text"
)

// Hosted sessions: `harn run` starts an agent in a terminal a node owns
// (here, or on --node N), `harn worktrees` lists and removes the worktrees
// those runs made, `harn agents interrupt|stop` act on a hosted agent, and
// `harn attach` sits down at its terminal (attach_hosted.go).

// ExitHostedFull: the node hosts its --max-hosted sessions already.
const ExitHostedFull = 23

// hostedErr maps a hosted call's status to its exit code.
func hostedErr(err error, p hook.Place) error {
	var se *api.StatusError
	if errors.As(err, &se) {
		switch {
		case se.Reason == api.ReasonHostedFull:
			return hook.WithCode(ExitHostedFull, errors.New(text.OneLine(se.Message())))
		case errors.Is(err, api.ErrPermission):
			return hook.WithCode(hook.ExitRemoteRefused, errors.New(text.OneLine(se.Message())))
		}
	}
	return hook.RpcErr(err, p)
}

func newRunCmd() *cobra.Command {
	agents := strings.Join(append(all.Hostable(), "harn"), ", ")
	c := &cobra.Command{
		Use:   "run AGENT [PROMPT]",
		Short: "start an agent in a terminal a node hosts (here or --node N), optionally in a new worktree",
		Long: `run starts AGENT as a long-lived interactive process in a pseudo-terminal that
the node owns: here, or on --node N. AGENT is a built-in (` + agents + `) or a
launcher of that node's config ([launchers]); a run from another node may name
a built-in or a launcher the target lists in --remote-exec, in a directory
under one of its --workspace roots, and passes its --remote-control policy.
PROMPT is passed the way the agent takes a first prompt (a launcher gets it
as its last argument).

--worktree BRANCH makes a git worktree of --dir's repository on the new
branch BRANCH, from --base (default: the repository's HEAD), at
<repository>/.harn/worktrees/BRANCH, and runs the agent there.

The session is one row of the roster from its start (agents list shows it
hosted). Sit down at its terminal with harn attach SESSION; steer it with
harn task steer --session SESSION TEXT; hold a follow-up for the end of its
turn with harn task follow-up; harn agents interrupt and harn agents stop.`,
		Args: cobra.MinimumNArgs(1),
		RunE: runRun,
	}
	f := c.Flags()
	f.String("node", "", "the node that hosts it (default: this one)")
	f.String("dir", "", "the directory it runs in, on that node (default: here on this node; on another, its first --workspace)")
	f.String("worktree", "", "run in a new git worktree of --dir's repository, on this new `branch`")
	f.String("base", "", "the ref the --worktree branch starts from (default: the repository's HEAD)")
	hook.AddJSONFlag(c)
	return c
}

func runRun(c *cobra.Command, args []string) error {
	node, _ := c.Flags().GetString("node")
	dir, _ := c.Flags().GetString("dir")
	req := &api.HostedRunRequest{Agent: args[0], Node: node, Prompt: strings.Join(args[1:], " ")}
	req.Worktree, _ = c.Flags().GetString("worktree")
	req.Base, _ = c.Flags().GetString("base")
	if req.Base != "" && req.Worktree == "" {
		return hook.UsageErr(errors.New("run: --base needs --worktree BRANCH (the new branch starts at --base)"))
	}
	switch {
	case dir == "" && node == "":
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		dir = wd
	case dir != "" && node == "":
		abs, err := filepath.Abs(dir)
		if err != nil {
			return hook.UsageErr(fmt.Errorf("run: --dir %s: %w", dir, err))
		}
		dir = abs
	}
	req.Dir = dir
	if cols, rows, err := term.GetSize(int(os.Stdout.Fd())); err == nil && rows > 0 && cols > 0 {
		req.Rows, req.Cols = uint32(rows), uint32(cols)
	}
	return withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
		res, err := cl.api.Hosted().Run(ctx, req)
		if err != nil {
			return hostedErr(err, p)
		}
		if hook.AsJSON(c) {
			return hook.WriteJSON(c, map[string]any{"session": res.Session, "node": res.Node, "worktree": res.Worktree,
				"branch": res.Branch, "dir": res.Dir, "pid": res.Pid, "agent": res.Agent})
		}
		w := c.OutOrStdout()
		fmt.Fprintf(w, "session %s (%s) on %s in %s\n", text.Sanitize(res.Session), text.Sanitize(res.Agent), text.Sanitize(res.Node), text.Sanitize(res.Dir))
		if res.Worktree != "" {
			fmt.Fprintf(w, "worktree on branch %s\n", text.Sanitize(res.Branch))
		}
		fmt.Fprintf(w, "attach: harn attach %s\n", text.Sanitize(res.Session))
		return nil
	})
}

func newWorktreesCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "worktrees",
		Short: "list the worktrees a node made for hosted sessions, with their session and whether they are clean",
		Args:  hook.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			node, _ := c.Flags().GetString("node")
			return withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
				res, err := cl.api.Hosted().Worktrees(ctx, &api.WorktreesRequest{Node: node})
				if err != nil {
					return hostedErr(err, p)
				}
				type wtJSON struct {
					Path     string `json:"path"`
					Branch   string `json:"branch"`
					Base     string `json:"base"`
					Repo     string `json:"repo"`
					Session  string `json:"session"`
					Live     bool   `json:"live"`
					Clean    bool   `json:"clean"`
					Unpushed int32  `json:"unpushed"`
					Node     string `json:"node"`
					Created  string `json:"created"`
					Error    string `json:"error,omitempty"`
				}
				out := make([]wtJSON, 0, len(res.Worktrees))
				for _, w := range res.Worktrees {
					out = append(out, wtJSON{Path: w.Path, Branch: w.Branch, Base: w.Base, Repo: w.Repo, Session: w.Session,
						Live: w.Live, Clean: w.Clean, Unpushed: w.Unpushed, Node: w.Node,
						Created: time.Unix(0, w.CreatedUnixNano).UTC().Format(time.RFC3339), Error: w.Error})
				}
				if hook.AsJSON(c) {
					return hook.WriteJSON(c, out)
				}
				if len(out) == 0 {
					fmt.Fprintf(c.OutOrStdout(), "no worktrees on %s\n", text.Sanitize(res.Node))
					return nil
				}
				tw := tabwriter.NewWriter(c.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "PATH\tBRANCH\tSESSION\tSTATE\tNODE")
				for _, w := range out {
					st := "clean"
					switch {
					case w.Error != "":
						st = "unreadable: " + w.Error
					case !w.Clean:
						st = "dirty"
					case w.Unpushed > 0:
						st = fmt.Sprintf("%d unpushed", w.Unpushed)
					}
					if w.Live {
						st += ", running"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", text.OneLine(w.Path), text.OneLine(w.Branch), text.OneLine(w.Session), text.OneLine(st), text.OneLine(w.Node))
				}
				return tw.Flush()
			})
		},
	}
	c.Flags().String("node", "", "the node whose worktrees to list (default: this one)")
	hook.AddJSONFlag(c)
	rm := &cobra.Command{
		Use:   "remove WORKTREE",
		Short: "remove a worktree (its path, branch or session); a dirty or unpushed one needs --force",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			node, _ := c.Flags().GetString("node")
			force, _ := c.Flags().GetBool("force")
			return withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
				res, err := cl.api.Hosted().Worktrees(ctx, &api.WorktreesRequest{Node: node, Remove: args[0], Force: force})
				if err != nil {
					return hostedErr(err, p)
				}
				fmt.Fprintln(c.OutOrStdout(), text.OneLine(res.Message))
				return nil
			})
		},
	}
	rm.Flags().String("node", "", "the node that made it (default: this one)")
	rm.Flags().Bool("force", false, "remove it even with uncommitted changes or unpushed commits (a branch with commits stays)")
	c.AddCommand(rm)
	return c
}

// addHostedAgentCmds adds `agents interrupt` and `agents stop`.
func addHostedAgentCmds(c *cobra.Command) {
	for _, op := range []struct{ use, op, short string }{
		{"interrupt SESSION", "interrupt", "send a hosted agent its interrupt key (Esc): its current step stops, the session goes on"},
		{"stop SESSION", "stop", "end a hosted agent's process (SIGTERM, then SIGKILL after the grace period) and its session"},
	} {
		cmd := &cobra.Command{
			Use:   op.use,
			Short: op.short,
			Args:  cobra.ExactArgs(1),
			RunE: func(c *cobra.Command, args []string) error {
				node, _ := c.Flags().GetString("node")
				return withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
					res, err := cl.api.Hosted().Act(ctx, &api.HostedActRequest{Session: args[0], Node: node, Op: op.op})
					if err != nil {
						return hostedErr(err, p)
					}
					if hook.AsJSON(c) {
						return hook.WriteJSON(c, map[string]any{"session": res.Session, "node": res.Node, "mode": res.Mode, "message": res.Message})
					}
					fmt.Fprintln(c.OutOrStdout(), text.OneLine(res.Message))
					return nil
				})
			},
		}
		cmd.Flags().String("node", "", "the node that hosts it (default: where the roster places it)")
		hook.AddJSONFlag(cmd)
		c.AddCommand(cmd)
	}
}
