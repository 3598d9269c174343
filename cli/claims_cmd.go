package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/hookwire"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/claims/claimwire"
	"github.com/harn-dev/harn/util/text"
)

// pingBudget bounds `harn agents ping` from end to end.
const pingBudget = time.Second

// ErrNotInRepo: a path to release is in no git repository.
var ErrNotInRepo = errors.New("not in a git repository")

// addCoordCmds adds release-claim, end and ping to `harn agents`.
func addCoordCmds(c *cobra.Command) {
	c.AddCommand(newReleaseClaimCmd(), newEndCmd(), newPingCmd())
}

func newReleaseClaimCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "release-claim PATH... | --all",
		Short: "release write claims of a session (default: this one) on PATHs, or all of them",
		Args:  cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			all, _ := c.Flags().GetBool("all")
			if all == (len(args) > 0) {
				return hook.UsageErr(errors.New("release-claim: name the PATHs to release, or give --all"))
			}
			var reqs []claimwire.Request
			if !all {
				var err error
				if reqs, err = claimRequestsOf(args); err != nil {
					return hook.UsageErr(err)
				}
			}
			return withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
				id, err := coordSession(ctx, c, cl, p)
				if err != nil {
					return err
				}
				res, err := coord(ctx, cl, p, wire.CoordRelease, wire.CoordBody{Session: id, All: all, Claims: reqs})
				if err != nil {
					return err
				}
				if hook.AsJSON(c) {
					return hook.WriteJSON(c, res)
				}
				printReleased(c.OutOrStdout(), res)
				return nil
			})
		},
	}
	addSessionFlag(c)
	c.Flags().Bool("all", false, "release every claim of the session")
	hook.AddJSONFlag(c)
	return c
}

func printReleased(w io.Writer, res wire.CoordResult) {
	if len(res.Claims) == 0 {
		fmt.Fprintf(w, "no claim of %s was released (it held none of those)\n", text.Sanitize(res.Session))
		return
	}
	fmt.Fprintf(w, "released %d claim(s) of %s:\n", len(res.Claims), text.Sanitize(res.Session))
	for _, cl := range res.Claims {
		fmt.Fprintf(w, "  %s  %s\n", text.Clip(text.OneLine(cl.Repo), 80), text.Clip(text.OneLine(cl.Path), 160))
	}
}

// claimRequestsOf turns paths (relative to the working directory) into
// claim requests by repository.
func claimRequestsOf(paths []string) ([]claimwire.Request, error) {
	var out []claimwire.Request
	byRepo := map[string]int{}
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("release-claim: %s: %w", p, err)
		}
		info, ok := hook.RepoOf(filepath.Dir(abs))
		if !ok {
			return nil, fmt.Errorf("release-claim: %s: %w; claims name files of a repository", p, ErrNotInRepo)
		}
		rel, err := filepath.Rel(info.Top, abs)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			return nil, fmt.Errorf("release-claim: %s: %w; name a file inside it", p, ErrNotInRepo)
		}
		repo := claimwire.RepoIdentity(info.Origin, info.Top)
		i, ok := byRepo[repo]
		if !ok {
			i = len(out)
			byRepo[repo] = i
			out = append(out, claimwire.Request{Repo: repo})
		}
		out[i].Paths = append(out[i].Paths, filepath.ToSlash(rel))
	}
	for i := range out {
		if len(out[i].Paths) > claimwire.MaxPaths {
			return nil, fmt.Errorf("release-claim: at most %d paths of one repository at a time", claimwire.MaxPaths)
		}
	}
	return out, nil
}

// coordSession is --session as given (the node resolves it, on any node),
// else the calling agent's session.
func coordSession(ctx context.Context, c *cobra.Command, cl *client, p hook.Place) (string, error) {
	if id, _ := c.Flags().GetString("session"); id != "" {
		return id, nil
	}
	st, err := currentSession(ctx, c, cl, p)
	if err != nil {
		return "", err
	}
	return st.SessionID, nil
}

// coord runs one coordination action on the local node.
func coord(ctx context.Context, cl *client, p hook.Place, op string, b wire.CoordBody) (wire.CoordResult, error) {
	out, err := cl.api.Coord(ctx, wire.CoordRequestOf(op, b))
	if err != nil {
		return wire.CoordResult{}, coordErr(err, p)
	}
	return wire.CoordResultFromAPI(out.Result), nil
}

// coordErr maps a Coord answer: a refused remote end exits 16, an
// unreachable owner 5 with the node's words.
func coordErr(err error, p hook.Place) error {
	var se *api.StatusError
	if errors.As(err, &se) {
		msg := errors.New(text.OneLine(se.Message()))
		switch {
		case errors.Is(se, api.ErrWriteRefused):
			return hook.RpcErr(err, p) // the registry's write authority: exit 12
		case hookwire.CodeOf(se) == hookwire.PermissionDenied:
			return hook.WithCode(hook.ExitRemoteRefused, msg)
		case errors.Is(se, api.ErrOwnerUnreachable):
			return hook.WithCode(hook.ExitUnavailable, msg)
		}
	}
	return hook.RpcErr(err, p)
}

func newEndCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "end",
		Short: "end a session (default: this one) with the session.end the reaper writes, on its node",
		Args:  hook.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			reason, _ := c.Flags().GetString("reason")
			return withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
				id, err := coordSession(ctx, c, cl, p)
				if err != nil {
					return err
				}
				res, err := coord(ctx, cl, p, wire.CoordEnd, wire.CoordBody{Session: id, Reason: reason})
				if err != nil {
					return err
				}
				if hook.AsJSON(c) {
					return hook.WriteJSON(c, res)
				}
				if res.Already {
					fmt.Fprintf(c.OutOrStdout(), "%s on node %s had already ended\n", text.Sanitize(res.Session), text.Sanitize(res.Node))
					return nil
				}
				if reason == "" {
					reason = wire.ReasonOperator
				}
				fmt.Fprintf(c.OutOrStdout(), "ended %s on node %s (reason %s)\n", text.Sanitize(res.Session), text.Sanitize(res.Node), text.OneLine(reason))
				return nil
			})
		},
	}
	addSessionFlag(c)
	c.Flags().String("reason", "", "session.end's reason (default operator)")
	hook.AddJSONFlag(c)
	return c
}

func newPingCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "ping ID",
		Short: "ask the session's node whether its agent process is alive (within 1 s)",
		Long: `Asks the node that owns the session whether the agent's process (its pid and
start time, the reaper's check) still exists. Exits 0 when it does, 3 when it
does not (or the session is unknown), 5 when the owner does not answer within
a second.`,
		Args: exactArgs(1, "a session id or unique prefix"),
		RunE: func(c *cobra.Command, args []string) error {
			p := hook.PlaceOf(c)
			cl, err := connect(c.Context(), p, 5*time.Second)
			if err != nil {
				return err
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), pingBudget)
			defer cancel()
			res, err := coord(ctx, cl, p, wire.CoordPing, wire.CoordBody{Session: args[0]})
			if err != nil {
				if ctx.Err() != nil {
					return hook.WithCode(hook.ExitUnavailable, fmt.Errorf("ping: the owner of %s did not answer within %s", text.OneLine(args[0]), pingBudget))
				}
				return err
			}
			if hook.AsJSON(c) {
				if err := hook.WriteJSON(c, res); err != nil {
					return err
				}
			}
			if !res.Alive {
				if !hook.AsJSON(c) {
					fmt.Fprintf(c.OutOrStdout(), "%s on node %s: agent process gone\n", text.Sanitize(res.Session), text.Sanitize(res.Node))
				}
				return &hook.SilentError{Code: hook.ExitNotFound}
			}
			if !hook.AsJSON(c) && res.Hosted {
				fmt.Fprintf(c.OutOrStdout(), "%s on node %s: alive (a harn runtime session; the node, pid %d, holds it)\n", text.Sanitize(res.Session), text.Sanitize(res.Node), res.PID)
			} else if !hook.AsJSON(c) {
				fmt.Fprintf(c.OutOrStdout(), "%s on node %s: alive (pid %d)\n", text.Sanitize(res.Session), text.Sanitize(res.Node), res.PID)
			}
			return nil
		},
	}
	hook.AddJSONFlag(c)
	return c
}
