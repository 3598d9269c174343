package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/tasks/taskapi"
	"github.com/harn-dev/harn/node/tasks/taskwire"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/presence/adapter/all"
	"github.com/harn-dev/harn/util/text"
)

// addPendingCmds adds `pending`, `approve` and `deny` under `agents`.
func addPendingCmds(agents *cobra.Command) {
	agents.AddCommand(newPendingCmd(), newAnswerCmd(true), newAnswerCmd(false))
}

// pendingRequests lists the mesh's open permission requests, oldest
// first, and says on w which nodes did not answer.
func pendingRequests(ctx context.Context, cl *client, p hook.Place, w io.Writer) ([]taskwire.Request, error) {
	res, err := cl.api.Pending(ctx, &api.PendingRequest{})
	if err != nil {
		return nil, hook.RpcErr(err, p)
	}
	reqs := make([]taskwire.Request, 0, len(res.Requests))
	for _, r := range res.Requests {
		reqs = append(reqs, taskapi.RequestFromAPI(r))
	}
	sort.Slice(reqs, func(i, j int) bool { return reqs[i].Opened.Before(reqs[j].Opened) })
	if w != nil {
		for _, n := range res.Unreachable {
			fmt.Fprintf(w, "harn: node %s did not answer; its requests are not listed\n", text.Sanitize(n))
		}
	}
	return reqs, nil
}

// pendingJSON is one request of `harn agents pending --json`: the request
// (its kind, what it asks: command, cwd, path, diff, and whose: session,
// agent) and what a person needs to decide it: its handle and place,
// since when it waits (waiting_since, RFC 3339) and for how long (waited,
// a Go duration; waiting_ms, milliseconds).
type pendingJSON struct {
	taskwire.Request
	Handle       string `json:"handle"`
	Place        string `json:"place,omitempty"`
	WaitingSince string `json:"waiting_since,omitempty"`
	Waited       string `json:"waited,omitempty"`
	WaitingMs    int64  `json:"waiting_ms"`
}

func pendingJSONOf(r taskwire.Request, now time.Time) pendingJSON {
	out := pendingJSON{Request: r, Handle: r.Handle(), Place: r.Place()}
	if !r.Opened.IsZero() {
		w := max(now.Sub(r.Opened), 0)
		out.WaitingSince, out.Waited, out.WaitingMs = presence.FormatTime(r.Opened), w.Round(time.Second).String(), w.Milliseconds()
	}
	return out
}

func newPendingCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "pending",
		Short: "list the calls that wait for an operator across the mesh, with what each asks: agents' permission requests (hooks installed with --remote-approve) and harn tasks' confirmations",
		Args:  hook.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
				reqs, err := pendingRequests(ctx, cl, p, c.ErrOrStderr())
				if err != nil {
					return err
				}
				now := hook.Clk.Now()
				if hook.AsJSON(c) {
					out := make([]pendingJSON, 0, len(reqs))
					for _, r := range reqs {
						out = append(out, pendingJSONOf(r, now))
					}
					return hook.WriteJSON(c, out)
				}
				if len(reqs) == 0 {
					fmt.Fprintln(c.OutOrStdout(), "no open permission requests")
					waitingHint(ctx, c, cl)
					return nil
				}
				writePending(c.OutOrStdout(), reqs, now)
				return nil
			})
		},
	}
	hook.AddJSONFlag(c)
	return c
}

// writePending prints each request as a block: what is asked in full and
// where, so that the operator never approves blind, and the commands that
// answer it.
//
//	r-01J…  Sable on buildbox (claude-code), waiting 2m
//	  tool:     Bash
//	  command:  git push --force-with-lease origin main
//	  cwd:      /home/me/harn
//	  project:  harn@main
//	  approve:  harn agents approve r-01J…
//	  deny:     harn agents deny r-01J…
func writePending(w io.Writer, reqs []taskwire.Request, now time.Time) {
	for i, r := range reqs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		wait := "waiting " + text.Age(now, r.Opened)
		if r.Opened.IsZero() {
			wait = "waiting"
		}
		fmt.Fprintf(w, "%s  %s on %s (%s), %s\n", text.Sanitize(r.ID), text.OneLine(r.Handle()),
			text.Sanitize(r.Node), text.OneLine(r.Agent), wait)
		line := func(k, v string) {
			if v = text.OneLine(v); v != "" {
				fmt.Fprintf(w, "  %-9s %s\n", k+":", v)
			}
		}
		// lines prints v's lines under k, the first beside it.
		lines := func(k, v string) {
			for j, l := range strings.Split(text.Lines(v), "\n") {
				if j == 0 {
					fmt.Fprintf(w, "  %-9s %s\n", k+":", l)
				} else {
					fmt.Fprintf(w, "  %-9s %s\n", "", l)
				}
			}
		}
		line("tool", r.Tool)
		if r.Kind == taskwire.KindConfirmation {
			line("task", r.Task+" (the call waits for its confirmation)")
		}
		switch {
		case r.Command != "":
			lines("command", r.Command)
			if r.CommandCut {
				line("", fmt.Sprintf("(the command is longer: its first %d KiB are shown)", taskwire.MaxCommand>>10))
			}
		case r.Path != "" && strings.HasSuffix(r.Detail, " lines)"):
			line("file", r.Detail) // the path as the agent gave it, and the lines its input replaces
		case r.Path != "":
			add, del := diffCounts(r.Diff)
			line("file", fmt.Sprintf("%s (+%d/−%d lines)", r.Path, add, del))
		default:
			what, detail := "input", r.Detail
			if detail == "" {
				detail = r.Summary
			}
			line(what, detail)
		}
		line("cwd", r.Cwd)
		line("project", r.Place())
		if r.Diff != "" {
			lines("diff", r.Diff)
			if r.DiffCut {
				line("", fmt.Sprintf("(the diff is longer: its first %d KiB are shown)", taskwire.MaxDiff>>10))
			}
		}
		id := text.Sanitize(r.ID)
		fmt.Fprintf(w, "  %-9s harn agents approve %s\n", "approve:", id)
		fmt.Fprintf(w, "  %-9s harn agents deny %s\n", "deny:", id)
		if r.SessionWide {
			line("or", "harn agents approve "+id+" --session-wide (also allows "+r.Tool+" for the rest of the session)")
		}
	}
}

// diffCounts counts the lines a diff adds and removes (not its headers).
func diffCounts(d string) (add, del int) {
	for _, l := range strings.Split(d, "\n") {
		switch {
		case strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, "--- "), strings.HasPrefix(l, "***"):
		case strings.HasPrefix(l, "+"):
			add++
		case strings.HasPrefix(l, "-"):
			del++
		}
	}
	return add, del
}

// waitingHint names the sessions that need input while no request is
// open: their hooks ask no remote decision (installed without
// --remote-approve), so the agent's own prompt waits for its operator.
func waitingHint(ctx context.Context, c *cobra.Command, cl *client) {
	res, err := cl.api.List(ctx, &api.ListRequest{})
	if err != nil {
		return
	}
	var names, agents []string
	seen := map[string]bool{}
	for _, r := range res.GetRows() {
		if r.GetActivity() != "needs_input" || r.GetEnded() {
			continue
		}
		h := r.GetName()
		if h == "" {
			h = r.GetSessionId()
		}
		names = append(names, text.OneLine(h)+" ("+text.OneLine(r.GetAgent())+" on "+text.OneLine(r.GetNode())+")")
		if a := r.GetAgent(); a != "" && !seen[a] && hook.Approves(a) {
			seen[a] = true
			agents = append(agents, a)
		}
	}
	if len(names) == 0 {
		return
	}
	w := c.ErrOrStderr()
	fmt.Fprintf(w, "harn: %s %s input at the agent's own prompt; its hook does not ask for a remote decision\n",
		strings.Join(names, ", "), plural(len(names), "needs", "need"))
	for _, a := range agents {
		fmt.Fprintf(w, "harn: to approve from anywhere, on that node run: harn hook install %s --remote-approve\n", text.OneLine(a))
	}
}

// sessionApprovers lists the agents whose adapter takes "allow for this
// session" (adapter.SessionApprover).
func sessionApprovers() string {
	var out []string
	for _, n := range hook.ApproverNames() {
		ad, _ := all.Lookup(n)
		if _, ok := ad.(adapter.SessionApprover); ok {
			out = append(out, n)
		}
	}
	return strings.Join(out, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// resolveRequest finds the request an operator names by its id or a
// unique prefix of it. An ambiguous prefix is ExitAmbiguous; a prefix no
// open request has goes to the node as given (it names an answered or
// expired request, or none: ExitNotFound).
func resolveRequest(reqs []taskwire.Request, id string) (string, error) {
	var match []string
	for _, r := range reqs {
		if r.ID == id {
			return id, nil
		}
		if strings.HasPrefix(r.ID, id) {
			match = append(match, r.ID)
		}
	}
	switch len(match) {
	case 0:
		return id, nil
	case 1:
		return match[0], nil
	}
	sort.Strings(match)
	return "", hook.WithCode(hook.ExitAmbiguous, fmt.Errorf("%q matches %d open requests (%s); give more of the id",
		text.OneLine(id), len(match), strings.Join(match, ", ")))
}

func newAnswerCmd(allow bool) *cobra.Command {
	use, short := "deny REQUEST", "deny a call that waits for an operator (a permission request or a harn task's confirmation), from any node"
	if allow {
		use, short = "approve REQUEST", "approve a call that waits for an operator (a permission request or a harn task's confirmation), from any node"
	}
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  exactArgs(1, "a request id (or a unique prefix of it) from `harn agents pending`"),
		RunE: func(c *cobra.Command, args []string) error {
			reason, _ := c.Flags().GetString("reason")
			var sessionWide bool
			if allow {
				sessionWide, _ = c.Flags().GetBool("session-wide")
			}
			if strings.TrimSpace(args[0]) == "" {
				return hook.UsageErr(errors.New("give a request id from `harn agents pending`"))
			}
			return withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
				id := args[0]
				var reqs []taskwire.Request
				// A whole id names its node: the answer goes there alone,
				// without listing every node's requests first.
				if _, named := taskwire.RequestNode(id); !named {
					if rs, err := pendingRequests(ctx, cl, p, nil); err == nil {
						reqs = rs
						if id, err = resolveRequest(reqs, id); err != nil {
							return err
						}
					}
				}
				for _, q := range reqs {
					if q.ID == id && q.Kind == taskwire.KindConfirmation {
						if sessionWide {
							return hook.UsageErr(fmt.Errorf("%s is a harn task's confirmation: --session-wide answers only an agent's permission request; approve it without the flag", text.OneLine(id)))
						}
						return answerConfirmation(c, ctx, cl, p, q, allow, reason)
					}
				}
				res, err := cl.api.Answer(ctx, &api.AnswerRequest{Request: id, Allow: allow, Reason: reason, SessionWide: sessionWide})
				if err != nil {
					return taskErr(err, p)
				}
				if res.Request == nil {
					return errors.New("the node's answer names no request")
				}
				r := taskapi.RequestFromAPI(res.Request)
				if hook.AsJSON(c) {
					return hook.WriteJSON(c, r)
				}
				verb := "denied"
				if allow {
					verb = "approved"
				}
				if sessionWide {
					verb += " for the rest of the session"
				}
				fmt.Fprintf(c.OutOrStdout(), "%s %s (%s on %s, session %s)\n", verb, text.Sanitize(r.ID),
					text.OneLine(r.Tool), text.Sanitize(r.Node), text.OneLine(r.Handle()))
				return nil
			})
		},
	}
	c.Flags().String("reason", "", "why (the agent shows it with a denial)")
	if allow {
		c.Flags().Bool("session-wide", false, "also allow the tool for the rest of the session (agents that can take it: "+sessionApprovers()+")")
	}
	hook.AddJSONFlag(c)
	return c
}

// answerConfirmation answers a harn task's confirmation as `harn task
// confirm|deny TASK CALL` does: the task's node checks the call again.
func answerConfirmation(c *cobra.Command, ctx context.Context, cl *client, p hook.Place, q taskwire.Request, allow bool, reason string) error {
	op := taskwire.OpDeny
	if allow {
		op = taskwire.OpConfirm
	}
	// The listing names the confirmation's node: the answer goes there
	// alone, not through a search of every member for the task.
	res, err := cl.api.Task(ctx, &api.TaskRequest{Node: q.Node, Action: taskapi.ActionToAPI(taskwire.Action{Op: op, Task: q.Task, Call: q.Call, Reason: reason})})
	if err != nil {
		return taskErr(err, p)
	}
	if hook.AsJSON(c) {
		q.Answer = &taskwire.Answer{Allow: allow, Reason: reason, At: hook.Clk.Now()}
		return hook.WriteJSON(c, q)
	}
	verb := "denied"
	if allow {
		verb = "approved"
	}
	node := q.Node
	if res.GetNode() != "" {
		node = res.GetNode()
	}
	fmt.Fprintf(c.OutOrStdout(), "%s %s (%s of task %s on %s, session %s)\n", verb, text.Sanitize(q.ID),
		text.OneLine(q.Tool), text.Sanitize(q.Task), text.Sanitize(node), text.OneLine(q.Handle()))
	return nil
}
