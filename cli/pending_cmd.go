//go:build !harn_hook

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

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/tasks/taskwire"
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
func pendingRequests(ctx context.Context, cl *client, p place, w io.Writer) ([]taskwire.Request, error) {
	res, err := cl.api.Pending(ctx, &api.PendingRequest{})
	if err != nil {
		return nil, rpcErr(err, p)
	}
	reqs := make([]taskwire.Request, 0, len(res.Requests))
	for _, r := range res.Requests {
		reqs = append(reqs, taskwire.RequestFromAPI(r))
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
// and what a person needs to decide it.
type pendingJSON struct {
	taskwire.Request
	Handle    string `json:"handle"`
	Place     string `json:"place,omitempty"`
	WaitingMs int64  `json:"waiting_ms"`
}

func newPendingCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "pending",
		Short: "list the agents' open permission requests across the mesh (hooks installed with --remote-approve)",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return withNode(c, func(ctx context.Context, cl *client, p place) error {
				reqs, err := pendingRequests(ctx, cl, p, c.ErrOrStderr())
				if err != nil {
					return err
				}
				now := clk.Now()
				if asJSON(c) {
					out := make([]pendingJSON, 0, len(reqs))
					for _, r := range reqs {
						out = append(out, pendingJSON{Request: r, Handle: r.Handle(), Place: r.Place(),
							WaitingMs: max(now.Sub(r.Opened), 0).Milliseconds()})
					}
					return writeJSON(c, out)
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
	addJSONFlag(c)
	return c
}

// writePending prints each request as a block: what is asked in full and
// where, so that the operator never approves blind.
//
//	r-01J…  Sable on buildbox (claude-code), waiting 2m
//	  tool:     Bash
//	  command:  make test ./...
//	  cwd:      /home/me/harn
//	  project:  harn@main
func writePending(w io.Writer, reqs []taskwire.Request, now time.Time) {
	for i, r := range reqs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s  %s on %s (%s), waiting %s\n", text.Sanitize(r.ID), text.OneLine(r.Handle()),
			text.Sanitize(r.Node), text.OneLine(r.Agent), text.Age(now, r.Opened))
		line := func(k, v string) {
			if v = text.OneLine(v); v != "" {
				fmt.Fprintf(w, "  %-9s %s\n", k+":", v)
			}
		}
		line("tool", r.Tool)
		what := "input"
		switch {
		case strings.Contains(r.Detail, " lines)"):
			what = "file"
		case r.Detail != "" && r.Detail[0] != '{':
			what = "command"
		}
		detail := r.Detail
		if detail == "" {
			detail = r.Summary
		}
		line(what, detail)
		line("cwd", r.Cwd)
		line("project", r.Place())
		if r.SessionWide {
			line("answer", "approve, approve --session-wide (allow "+r.Tool+" for the rest of the session), or deny")
		}
	}
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
		if a := r.GetAgent(); a != "" && !seen[a] && approves(a) {
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
	for _, n := range approverNames() {
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
	return "", withCode(ExitAmbiguous, fmt.Errorf("%q matches %d open requests (%s); give more of the id",
		text.OneLine(id), len(match), strings.Join(match, ", ")))
}

func newAnswerCmd(allow bool) *cobra.Command {
	use, short := "deny REQUEST", "deny an open permission request, from any node"
	if allow {
		use, short = "approve REQUEST", "approve an open permission request, from any node"
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
				return usageErr(errors.New("give a request id from `harn agents pending`"))
			}
			return withNode(c, func(ctx context.Context, cl *client, p place) error {
				id := args[0]
				if reqs, err := pendingRequests(ctx, cl, p, nil); err == nil {
					if id, err = resolveRequest(reqs, id); err != nil {
						return err
					}
				}
				res, err := cl.api.Answer(ctx, &api.AnswerRequest{Request: id, Allow: allow, Reason: reason, SessionWide: sessionWide})
				if err != nil {
					return taskErr(err, p)
				}
				if res.Request == nil {
					return errors.New("the node's answer names no request")
				}
				r := taskwire.RequestFromAPI(res.Request)
				if asJSON(c) {
					return writeJSON(c, r)
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
	addJSONFlag(c)
	return c
}
