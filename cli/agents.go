package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/presence/adapter/all"
	"github.com/harn-dev/harn/util/procinfo"
)

func newAgentsCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "agents",
		Short: "the roster of agent sessions: list, status, show, trace, lifecycle",
		Args:  hook.NoArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	c.AddCommand(newWhoamiCmd(), newListCmd(), newStatusCmd(), newShowCmd(), newTraceCmd(),
		newLifecycleCmd(), newSetTaskCmd(), newClaimCmd(), newFoldCmd())
	addPendingCmds(c)
	addWaitCmd(c)
	addCoordCmds(c)
	addHostedAgentCmds(c)
	return c
}

// rpcTimeout bounds a CLI call to the local node.
const rpcTimeout = 30 * time.Second

// withNode connects to the local node (starting it if needed) and runs fn.
func withNode(c *cobra.Command, fn func(ctx context.Context, cl *client, p hook.Place) error) error {
	p := hook.PlaceOf(c)
	cl, err := connect(c.Context(), p, 5*time.Second)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	return fn(ctx, cl, p)
}

// stateOf is the session state of a reply's row.
func stateOf(r *api.SessionRow) (presence.State, error) {
	if r == nil {
		return presence.State{}, errNoRow
	}
	return r.State(), nil
}

func decodeState(b []byte) (presence.State, error) {
	var s presence.State
	err := json.Unmarshal(b, &s)
	return s, err
}

// agentSessionEnv are the agents' own session variables, where they exist
// (adapter.SessionEnver).
var agentSessionEnv = all.SessionEnv()

func addSessionFlag(c *cobra.Command) {
	c.Flags().String("session", "", "session id or unique prefix (default: HARN_SESSION, the agent's session variable, or the calling agent process)")
}

// currentSession resolves the session a command acts on: --session (or
// HARN_SESSION), the agents' session variables, then process ancestry.
func currentSession(ctx context.Context, c *cobra.Command, cl *client, p hook.Place) (presence.State, error) {
	row, err := currentSessionRow(ctx, c, cl, p)
	if err != nil {
		return presence.State{}, err
	}
	return stateOf(row)
}

// currentSessionRow is currentSession as the node's row.
func currentSessionRow(ctx context.Context, c *cobra.Command, cl *client, p hook.Place) (*api.SessionRow, error) {
	id, _ := c.Flags().GetString("session")
	if id == "" {
		for _, k := range agentSessionEnv {
			if v := os.Getenv(k); v != "" {
				id = v
				break
			}
		}
	}
	if id != "" {
		res, err := cl.api.Get(ctx, &api.SessionRequest{Id: id})
		if err != nil {
			return nil, hook.RpcErr(err, p)
		}
		return res.GetSession(), nil
	}
	anc, _ := procinfo.Ancestry(os.Getpid(), 32)
	req := &api.WhoamiRequest{}
	for _, pr := range anc {
		req.Ancestry = append(req.Ancestry, &api.Proc{Pid: int32(pr.PID), Start: pr.Start})
	}
	res, err := cl.api.Whoami(ctx, req)
	if err != nil {
		return nil, hook.RpcErr(err, p)
	}
	return res.GetSession(), nil
}

func newWhoamiCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "whoami",
		Short: "show the session this command runs in",
		Args:  hook.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
				row, err := currentSessionRow(ctx, c, cl, p)
				if err != nil {
					return err
				}
				return printSession(c, row, false)
			})
		},
	}
	addSessionFlag(c)
	addSilenceFlag(c)
	hook.AddJSONFlag(c)
	return c
}

// defaultSilenceAfter is how long a working session may go without
// evidence before readers show it as silent.
const defaultSilenceAfter = 5 * time.Minute

func addSilenceFlag(c *cobra.Command) {
	c.Flags().Duration("silence-after", defaultSilenceAfter, "show a working session with no evidence for longer than this as silent (0: never)")
}

func silenceAfter(c *cobra.Command) time.Duration {
	d, _ := c.Flags().GetDuration("silence-after")
	return d
}

func newListCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "list",
		Short: "list agent sessions, those that need you first (--all: ended ones too)",
		Args:  hook.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			all, _ := c.Flags().GetBool("all")
			consistent, _ := c.Flags().GetBool("consistent")
			f, err := listFilterOf(c)
			if err != nil {
				return err
			}
			if watching(c) {
				return runWatch(c, all, consistent, f) // watch.go
			}
			return withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
				// For --json the node sorts the rows and applies the
				// reader's silence rule (node/roster_json.go).
				res, err := cl.api.List(ctx, &api.ListRequest{All: all, Consistent: consistent,
					JsonArray: hook.AsJSON(c), SilenceAfterMs: silenceAfter(c).Milliseconds()})
				if err != nil {
					return hook.RpcErr(err, p)
				}
				staleNote(c, res.GetRead())
				now := hook.Clk.Now()
				rows, err := decodeRoster(res.GetRows(), now, silenceAfter(c))
				if err != nil {
					return err
				}
				rows = f.apply(rows)
				if hook.AsJSON(c) {
					return writeRosterJSON(c.OutOrStdout(), rows)
				}
				return renderRoster(c.OutOrStdout(), rows, now, useColour(c.OutOrStdout()), tableWidthOf(c))
			})
		},
	}
	c.Flags().Bool("all", false, "include ended sessions")
	c.Flags().Bool("consistent", false, "read the registry through the leader (linearizable; fails without a leader)")
	addListFilterFlags(c)
	addSilenceFlag(c)
	hook.AddJSONFlag(c)
	addWatchFlags(c)
	return c
}

// staleNote says on stderr when the roster's registry part is a stale
// replica.
func staleNote(c *cobra.Command, info *api.ReadInfo) {
	if info.GetStale() {
		fmt.Fprintf(c.ErrOrStderr(), "harn: stale read: this node's registry replica last heard from a leader %s ago (leader %q); pass --consistent to read through the leader\n",
			safe(orDash(info.GetLastContact())), safe(info.GetLeader()))
	}
}

// decodeRoster takes the node's rows, applies the silence rule and sorts
// them by urgency.
func decodeRoster(in []*api.SessionRow, now time.Time, after time.Duration) ([]*rosterRow, error) {
	rows := make([]*rosterRow, 0, len(in))
	for _, s := range in {
		r, err := newRosterRow(s)
		if err != nil {
			return nil, fmt.Errorf("cli: roster row from the node: %w", err)
		}
		r.markSilence(now, after)
		r.rank = r.UrgencyKey().Rank()
		rows = append(rows, r)
	}
	sortRows(rows)
	return rows, nil
}

// writeRosterJSON writes sorted rows as one JSON array in one buffered
// write: a roster of thousands of sessions must not cost a syscall per
// session.
func writeRosterJSON(w io.Writer, rows []*rosterRow) error {
	out := bufio.NewWriterSize(w, 1<<20)
	out.WriteString("[")
	for i := range rows {
		if i > 0 {
			out.WriteString(",\n")
		} else {
			out.WriteString("\n")
		}
		if err := rows[i].writeJSON(out); err != nil {
			return err
		}
	}
	if len(rows) > 0 {
		out.WriteString("\n")
	}
	out.WriteString("]\n")
	return out.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// printSession prints one session's row for people (show, status,
// whoami), or with --json as its JSON form (with silent_since when this
// reader found the silence).
func printSession(c *cobra.Command, row *api.SessionRow, full bool) error {
	r, err := newRosterRow(row)
	if err != nil {
		return fmt.Errorf("cli: session from the node: %w", err)
	}
	now := hook.Clk.Now()
	r.markSilence(now, silenceAfter(c))
	if hook.AsJSON(c) {
		w := bufio.NewWriter(c.OutOrStdout())
		if err := r.writeJSON(w); err != nil {
			return err
		}
		w.WriteByte('\n')
		return w.Flush()
	}
	return detailView{now: now, loc: time.Local, full: full}.write(c.OutOrStdout(), r)
}

func newStatusCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "status ID",
		Short: "show a session's two state axes",
		Args:  exactArgs(1, "a session id, unique prefix or name"),
		RunE: func(c *cobra.Command, args []string) error {
			return withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
				raw, note, err := readSession(ctx, c, cl, p, args[0])
				if err != nil {
					return err
				}
				if hook.AsJSON(c) {
					st, err := stateOf(raw)
					if err != nil {
						return err
					}
					v := statusView(st)
					v.Note = note
					return hook.WriteJSON(c, v)
				}
				return printSession(c, raw, false)
			})
		},
	}
	addConsistentFlag(c)
	addSilenceFlag(c)
	hook.AddJSONFlag(c)
	return c
}

func addConsistentFlag(c *cobra.Command) {
	c.Flags().Bool("consistent", false, "read the registry's record through the leader (linearizable; fails without a leader)")
}

// statusView is the compact state of `status --json` and `fold`: the seed's
// two axes.
type statusJSON struct {
	SessionID          string `json:"session_id"`
	Name               string `json:"name,omitempty"`
	Activity           string `json:"activity"`
	ActivityUpdatedAt  string `json:"activity_updated_at,omitempty"`
	ActivitySource     string `json:"activity_source,omitempty"`
	TaskState          string `json:"task_state"`
	TaskStateUpdatedAt string `json:"task_state_updated_at,omitempty"`
	BlockerReason      string `json:"blocker_reason,omitempty"`
	Ended              bool   `json:"ended"`
	Node               string `json:"node,omitempty"`
	Note               string `json:"note,omitempty"`
}

// readSession reads one session anywhere in the mesh, as its roster JSON,
// and prints the read's note, if any, on stderr. With --consistent it is
// the registry's record read through the leader.
func readSession(ctx context.Context, c *cobra.Command, cl *client, p hook.Place, id string) (*api.SessionRow, string, error) {
	if consistent, _ := c.Flags().GetBool("consistent"); consistent {
		raw, err := consistentSession(ctx, cl, p, id)
		return raw, "", err
	}
	res, err := cl.api.Get(ctx, &api.SessionRequest{Id: id})
	if err != nil {
		return nil, "", hook.RpcErr(err, p)
	}
	noteLine(c, res.Note)
	if res.GetSession() == nil {
		return nil, "", errNoRow
	}
	return res.GetSession(), res.Note, nil
}

// consistentSession is one session of a consistent roster read (the
// registry through the leader): the exact id, else the one session whose
// id starts with id, else the one whose name is id.
func consistentSession(ctx context.Context, cl *client, p hook.Place, id string) (*api.SessionRow, error) {
	res, err := cl.api.List(ctx, &api.ListRequest{All: true, Consistent: true})
	if err != nil {
		return nil, hook.RpcErr(err, p)
	}
	var prefix, named []*api.SessionRow
	for _, r := range res.GetRows() {
		switch {
		case r.GetSessionId() == id:
			return r, nil
		case strings.HasPrefix(r.GetSessionId(), id):
			prefix = append(prefix, r)
		case r.GetName() != "" && strings.EqualFold(r.GetName(), id):
			named = append(named, r)
		}
	}
	for _, set := range [][]*api.SessionRow{prefix, named} {
		switch len(set) {
		case 0:
			continue
		case 1:
			return set[0], nil
		}
		return nil, hook.WithCode(hook.ExitAmbiguous, fmt.Errorf("%q matches %d sessions in the registry; give more of the id", safe(id), len(set)))
	}
	return nil, hook.WithCode(hook.ExitNotFound, fmt.Errorf("no session %q in the registry", safe(id)))
}

// noteLine prints a read's note (the live detail is unavailable) on stderr.
func noteLine(c *cobra.Command, note string) {
	if note != "" {
		fmt.Fprintln(c.ErrOrStderr(), "harn: "+safe(note))
	}
}

func statusView(s presence.State) statusJSON {
	return statusJSON{SessionID: s.SessionID, Name: s.Name, Activity: string(s.Activity),
		ActivityUpdatedAt: presence.FormatTime(s.ActivityUpdatedAt), ActivitySource: s.ActivitySource,
		TaskState: string(s.TaskState), TaskStateUpdatedAt: presence.FormatTime(s.TaskStateUpdatedAt),
		BlockerReason: s.BlockerReason, Ended: s.Ended, Node: s.Node}
}

func newShowCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "show ID",
		Short: "show a session in full, live or ended",
		Args:  exactArgs(1, "a session id, unique prefix or name"),
		RunE: func(c *cobra.Command, args []string) error {
			return withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
				raw, _, err := readSession(ctx, c, cl, p, args[0])
				if err != nil {
					return err
				}
				return printSession(c, raw, true)
			})
		},
	}
	addConsistentFlag(c)
	addSilenceFlag(c)
	hook.AddJSONFlag(c)
	return c
}

func newTraceCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "trace ID",
		Short: "print a session's events in (ts, id) order (--jsonl: canonical events that `fold` reads)",
		Args:  exactArgs(1, "a session id, unique prefix or name"),
		RunE: func(c *cobra.Command, args []string) error {
			jsonl, _ := c.Flags().GetBool("jsonl")
			if jsonl && hook.AsJSON(c) {
				return hook.UsageErr(errors.New("trace takes --json or --jsonl, not both"))
			}
			return withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
				res, err := cl.api.Trace(ctx, &api.SessionRequest{Id: args[0]})
				if err != nil {
					return hook.RpcErr(err, p)
				}
				noteLine(c, res.Note)
				evs := make([]presence.Event, 0, len(res.Events))
				for _, e := range res.Events {
					ev, err := wire.EventFromAPI(e)
					if err != nil {
						return err
					}
					evs = append(evs, ev)
				}
				switch {
				case hook.AsJSON(c):
					return hook.WriteJSON(c, evs)
				case jsonl:
					return writeJSONL(c.OutOrStdout(), evs)
				}
				return writeTrace(c.OutOrStdout(), evs, time.Local)
			})
		},
	}
	c.Flags().Bool("jsonl", false, "print canonical events, one JSON object per line (what harn agents fold reads)")
	hook.AddJSONFlag(c)
	return c
}

// writeJSONL writes events as canonical JSONL, one compact object a line.
func writeJSONL(w io.Writer, evs []presence.Event) error {
	out := bufio.NewWriter(w)
	for _, e := range evs {
		b, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("cli: event %s: %w", safe(e.ID), err)
		}
		out.Write(b)
		out.WriteByte('\n')
	}
	return out.Flush()
}

// writeTrace writes events for people: local times to the second (the
// sequence number orders events within a second) and safe attributes.
func writeTrace(w io.Writer, evs []presence.Event, loc *time.Location) error {
	cols := []column{{"TIME", 1 << 30}, {"SEQ", 1 << 30}, {"TYPE", 1 << 30}, {"ATTRS", 20}}
	rows := make([][nCols]cell, 0, len(evs))
	for _, e := range evs {
		attrs := "-"
		if len(e.Attrs) > 0 {
			b, _ := json.Marshal(e.Attrs)
			attrs = safe(string(b))
		}
		var r [nCols]cell
		r[0] = cell{s: e.TS.In(loc).Format("2006-01-02 15:04:05")}
		r[1] = cell{s: fmt.Sprint(e.Seq)}
		r[2] = cell{s: dash(safe(e.Type))}
		r[3] = cell{s: attrs}
		rows = append(rows, r)
	}
	return writeTable(w, cols, rows, fitWidths(cols, rows, tableWidth), false)
}

func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return hook.UsageErr(fmt.Errorf("%s takes %s; got %d arguments", c.CommandPath(), what, len(args)))
		}
		return nil
	}
}

func newLifecycleCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "lifecycle active|blocked|done",
		Short: "declare the task's lifecycle (blocked needs --reason; done needs a task and a clean, pushed git state)",
		Args:  exactArgs(1, "one of active, blocked, done"),
		RunE: func(c *cobra.Command, args []string) error {
			to := presence.TaskState(args[0])
			switch to {
			case presence.TaskActive, presence.TaskBlocked, presence.TaskDone:
			default:
				return hook.UsageErr(fmt.Errorf("task state %q: use active, blocked or done", args[0]))
			}
			reason, _ := c.Flags().GetString("reason")
			if to == presence.TaskBlocked && strings.TrimSpace(reason) == "" {
				return hook.WithCode(hook.ExitRefused, errors.New("reason_required: blocked requires a reason; pass --reason"))
			}
			timeout, _ := c.Flags().GetDuration("timeout")
			if timeout <= 0 {
				return hook.UsageErr(fmt.Errorf("--timeout %s: give a positive duration, such as 5s", timeout))
			}
			return withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
				st, err := currentSession(ctx, c, cl, p)
				if err != nil {
					return err
				}
				out, err := declare(ctx, cl, p, st, to, reason, timeout)
				if err != nil {
					return err
				}
				now := out.session
				if hook.AsJSON(c) {
					if err := hook.WriteJSON(c, map[string]any{"recorded": out.recorded, "pending": out.pending, "note": out.note, "session": now}); err != nil {
						return err
					}
					if out.pending {
						return &hook.SilentError{Code: hook.ExitPending}
					}
					return nil
				}
				switch {
				case out.pending:
					return hook.WithCode(hook.ExitPending, fmt.Errorf("%s is %s in this node's ledger; the registry write is still pending after %s and will be retried",
						safe(now.SessionID), safe(string(now.TaskState)), timeout))
				case !out.recorded:
					fmt.Fprintln(c.OutOrStdout(), safe(out.note))
					return nil
				}
				fmt.Fprintf(c.OutOrStdout(), "%s is %s; suggested name: %s\n", safe(now.SessionID), safe(string(now.TaskState)), safe(now.SessionName()))
				return nil
			})
		},
	}
	c.Flags().Duration("timeout", defaultLifecycleTimeout, "wait at most this long for the registry write; then exit "+fmt.Sprint(hook.ExitPending)+" if it is still pending")
	c.Flags().String("reason", "", "why (required for blocked)")
	addSessionFlag(c)
	hook.AddJSONFlag(c)
	return c
}

func newSetTaskCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "set-task TEXT",
		Short: "set the session's task text (lifecycle-neutral)",
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 || strings.TrimSpace(strings.Join(args, " ")) == "" {
				return hook.UsageErr(errors.New("set-task takes the task text; got none"))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			text := strings.Join(args, " ")
			return withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
				st, err := currentSession(ctx, c, cl, p)
				if err != nil {
					return err
				}
				res, err := cl.api.SetTask(ctx, &api.SetTaskRequest{SessionId: st.SessionID, Task: text})
				if err != nil {
					return hook.RpcErr(err, p)
				}
				st, err = decodeState(res.SessionJson)
				if err != nil {
					return err
				}
				if res.Warning != "" {
					fmt.Fprintln(c.ErrOrStderr(), "harn: warning: "+safe(res.Warning))
				}
				if hook.AsJSON(c) {
					return hook.WriteJSON(c, map[string]any{"warning": res.Warning, "session": st})
				}
				fmt.Fprintf(c.OutOrStdout(), "%s task: %s\n", safe(st.SessionID), safe(st.Task))
				return nil
			})
		},
	}
	addSessionFlag(c)
	hook.AddJSONFlag(c)
	return c
}

func newClaimCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "claim PATH...",
		Short: "record write claims: files this session writes",
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return hook.UsageErr(errors.New("claim takes one or more paths"))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			paths := make([]string, 0, len(args))
			for _, a := range args {
				abs, err := filepath.Abs(a)
				if err != nil {
					return hook.UsageErr(fmt.Errorf("path %q: %v", a, err))
				}
				paths = append(paths, abs)
			}
			return withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
				st, err := currentSession(ctx, c, cl, p)
				if err != nil {
					return err
				}
				res, err := cl.api.Claim(ctx, &api.ClaimRequest{SessionId: st.SessionID, Paths: paths})
				if err != nil {
					return hook.RpcErr(err, p)
				}
				st, err = decodeState(res.SessionJson)
				if err != nil {
					return err
				}
				if hook.AsJSON(c) {
					return hook.WriteJSON(c, st)
				}
				fmt.Fprintf(c.OutOrStdout(), "%s claims %d paths\n", safe(st.SessionID), len(st.Claims))
				return nil
			})
		},
	}
	addSessionFlag(c)
	hook.AddJSONFlag(c)
	return c
}
