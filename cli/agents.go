package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/node"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/procinfo"
)

func init() { commandSet = append(commandSet, newAgentsCmd) }

func newAgentsCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "agents",
		Short: "the roster of agent sessions: list, status, show, trace, lifecycle",
		Args:  noArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	c.AddCommand(newWhoamiCmd(), newListCmd(), newStatusCmd(), newShowCmd(), newTraceCmd(),
		newLifecycleCmd(), newSetTaskCmd(), newClaimCmd(), newFoldCmd())
	addPendingCmds(c)
	return c
}

// rpcTimeout bounds a CLI call to the local node.
const rpcTimeout = 30 * time.Second

// withNode connects to the local node (starting it if needed) and runs fn.
func withNode(c *cobra.Command, fn func(ctx context.Context, cl *client, p place) error) error {
	p := placeOf(c)
	cl, err := connect(c.Context(), p, 5*time.Second)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	return fn(ctx, cl, p)
}

func decodeState(b []byte) (presence.State, error) {
	var s presence.State
	err := json.Unmarshal(b, &s)
	return s, err
}

// agentSessionEnv are the agents' own session variables, where they exist.
var agentSessionEnv = []string{"CLAUDE_SESSION_ID", "CODEX_SESSION_ID", "CODEX_THREAD_ID", "GEMINI_SESSION_ID", "CURSOR_CONVERSATION_ID"}

func addSessionFlag(c *cobra.Command) {
	c.Flags().String("session", "", "session id or unique prefix (default: HARN_SESSION, the agent's session variable, or the calling agent process)")
}

// currentSession resolves the session a command acts on: --session (or
// HARN_SESSION), the agents' session variables, then process ancestry.
func currentSession(ctx context.Context, c *cobra.Command, cl *client, p place) (presence.State, error) {
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
			return presence.State{}, rpcErr(err, p)
		}
		return decodeState(res.SessionJson)
	}
	anc, _ := procinfo.Ancestry(os.Getpid(), 32)
	req := &api.WhoamiRequest{}
	for _, pr := range anc {
		req.Ancestry = append(req.Ancestry, &api.Proc{Pid: int32(pr.PID), Start: pr.Start})
	}
	res, err := cl.api.Whoami(ctx, req)
	if err != nil {
		return presence.State{}, rpcErr(err, p)
	}
	return decodeState(res.SessionJson)
}

func newWhoamiCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "whoami",
		Short: "show the session this command runs in",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return withNode(c, func(ctx context.Context, cl *client, p place) error {
				st, err := currentSession(ctx, c, cl, p)
				if err != nil {
					return err
				}
				return printState(c, st)
			})
		},
	}
	addSessionFlag(c)
	addJSONFlag(c)
	return c
}

func newListCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "list",
		Short: "list live agent sessions (--all: ended ones too)",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			all, _ := c.Flags().GetBool("all")
			consistent, _ := c.Flags().GetBool("consistent")
			return withNode(c, func(ctx context.Context, cl *client, p place) error {
				res, err := cl.api.List(ctx, &api.ListRequest{All: all, Consistent: consistent})
				if err != nil {
					return rpcErr(err, p)
				}
				var info node.ReadInfo
				_ = json.Unmarshal(res.ReadJson, &info)
				if info.Stale {
					fmt.Fprintf(c.ErrOrStderr(), "harn: stale read: this node's registry replica last heard from a leader %s ago (leader %q); pass --consistent to read through the leader\n",
						orDash(info.LastContact), info.LeaderID)
				}
				if asJSON(c) {
					// One buffered write: a roster of thousands of sessions
					// must not cost a syscall per session.
					out := bufio.NewWriterSize(c.OutOrStdout(), 1<<20)
					out.WriteString("[")
					for i, b := range res.SessionsJson {
						if i > 0 {
							out.WriteString(",\n")
						} else {
							out.WriteString("\n")
						}
						out.Write(b)
					}
					out.WriteString("\n]\n")
					return out.Flush()
				}
				rows := make([]row, 0, len(res.SessionsJson))
				for _, b := range res.SessionsJson {
					r, err := decodeRow(b)
					if err != nil {
						return err
					}
					rows = append(rows, r)
				}
				return printTable(c, rows)
			})
		},
	}
	c.Flags().Bool("all", false, "include ended sessions")
	c.Flags().Bool("consistent", false, "read the registry through the leader (linearizable; fails without a leader)")
	addJSONFlag(c)
	return c
}

// row is a roster entry as the CLI reads it: the state and reachability.
type row struct {
	presence.State
	Reachable        bool
	UnreachableSince time.Time
}

func decodeRow(b []byte) (row, error) {
	st, err := decodeState(b)
	if err != nil {
		return row{}, err
	}
	var extra struct {
		Reachable        *bool  `json:"reachable"`
		UnreachableSince string `json:"unreachable_since"`
	}
	_ = json.Unmarshal(b, &extra)
	r := row{State: st, Reachable: extra.Reachable == nil || *extra.Reachable}
	r.UnreachableSince, _ = presence.ParseTime(extra.UnreachableSince)
	return r, nil
}

func printTable(c *cobra.Command, states []row) error {
	if len(states) == 0 {
		fmt.Fprintln(c.OutOrStdout(), "no agent sessions")
		return nil
	}
	now := time.Now()
	tw := tabwriter.NewWriter(c.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tNAME\tAGENT\tACTIVITY\tTASK STATE\tTASK\tLAST\tNODE")
	for _, s := range states {
		life := string(s.TaskState)
		if s.BlockerReason != "" {
			life += " (" + clipText(s.BlockerReason, 40) + ")"
		}
		act := string(s.Activity)
		if s.Ended {
			act = "ended"
		}
		where := s.Node
		if !s.Reachable {
			where += " (unreachable"
			if !s.UnreachableSince.IsZero() {
				where += " " + node.Age(now, s.UnreachableSince)
			}
			where += ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", clipText(s.SessionID, 12), "Agent "+s.Name,
			s.Agent, act, life, clipText(orDash(s.Task), 40), node.Age(now, s.LastEventAt), where)
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func clipText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func printState(c *cobra.Command, st presence.State) error {
	if asJSON(c) {
		return writeJSON(c, st)
	}
	w := c.OutOrStdout()
	fmt.Fprintf(w, "%s  %s\n", st.SessionID, st.SessionName())
	fmt.Fprintf(w, "  activity:   %s (since %s, from %s)\n", st.Activity, presence.FormatTime(st.ActivityUpdatedAt), orDash(st.ActivitySource))
	life := string(st.TaskState)
	if st.BlockerReason != "" {
		life += ": " + st.BlockerReason
	}
	fmt.Fprintf(w, "  task state: %s (since %s)\n", life, orDash(presence.FormatTime(st.TaskStateUpdatedAt)))
	fmt.Fprintf(w, "  task:       %s\n", orDash(st.Task))
	fmt.Fprintf(w, "  agent:      %s on %s", orDash(st.Agent), st.Node)
	if st.AgentPID > 0 {
		fmt.Fprintf(w, " (pid %d)", st.AgentPID)
	}
	fmt.Fprintln(w)
	if st.Ended {
		fmt.Fprintf(w, "  ended:      %s (%s)\n", presence.FormatTime(st.EndedAt), orDash(st.EndReason))
	}
	return nil
}

func newStatusCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "status ID",
		Short: "show a session's two state axes",
		Args:  exactArgs(1, "a session id or unique prefix"),
		RunE: func(c *cobra.Command, args []string) error {
			return withNode(c, func(ctx context.Context, cl *client, p place) error {
				st, res, err := getSession(ctx, c, cl, p, args[0])
				if err != nil {
					return err
				}
				if asJSON(c) {
					v := statusView(st)
					v.Note = res.Note
					return writeJSON(c, v)
				}
				return printState(c, st)
			})
		},
	}
	addJSONFlag(c)
	return c
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

// getSession reads one session anywhere in the mesh and prints the read's
// note, if any, on stderr.
func getSession(ctx context.Context, c *cobra.Command, cl *client, p place, id string) (presence.State, *api.SessionResponse, error) {
	res, err := cl.api.Get(ctx, &api.SessionRequest{Id: id})
	if err != nil {
		return presence.State{}, nil, rpcErr(err, p)
	}
	st, err := decodeState(res.SessionJson)
	if err != nil {
		return presence.State{}, nil, err
	}
	noteLine(c, res.Note)
	return st, res, nil
}

// noteLine prints a read's note (the live detail is unavailable) on stderr.
func noteLine(c *cobra.Command, note string) {
	if note != "" {
		fmt.Fprintln(c.ErrOrStderr(), "harn: "+note)
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
		Args:  exactArgs(1, "a session id or unique prefix"),
		RunE: func(c *cobra.Command, args []string) error {
			return withNode(c, func(ctx context.Context, cl *client, p place) error {
				st, res, err := getSession(ctx, c, cl, p, args[0])
				if err != nil {
					return err
				}
				if asJSON(c) {
					c.OutOrStdout().Write(res.SessionJson)
					fmt.Fprintln(c.OutOrStdout())
					return nil
				}
				if err := printState(c, st); err != nil {
					return err
				}
				w := c.OutOrStdout()
				fmt.Fprintf(w, "  started:    %s, last event %s, %d events\n", presence.FormatTime(st.StartedAt), presence.FormatTime(st.LastEventAt), st.Events)
				if st.Cwd != "" {
					fmt.Fprintf(w, "  cwd:        %s\n", st.Cwd)
				}
				for _, cl := range st.Claims {
					fmt.Fprintf(w, "  claim:      %s\n", cl)
				}
				return nil
			})
		},
	}
	addJSONFlag(c)
	return c
}

func newTraceCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "trace ID",
		Short: "print a session's events in (ts, id) order",
		Args:  exactArgs(1, "a session id or unique prefix"),
		RunE: func(c *cobra.Command, args []string) error {
			return withNode(c, func(ctx context.Context, cl *client, p place) error {
				res, err := cl.api.Trace(ctx, &api.SessionRequest{Id: args[0]})
				if err != nil {
					return rpcErr(err, p)
				}
				noteLine(c, res.Note)
				evs := make([]presence.Event, 0, len(res.Events))
				for _, e := range res.Events {
					ev, err := node.EventFromAPI(e)
					if err != nil {
						return err
					}
					evs = append(evs, ev)
				}
				if asJSON(c) {
					return writeJSON(c, evs)
				}
				tw := tabwriter.NewWriter(c.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "TS\tSEQ\tTYPE\tATTRS")
				for _, e := range evs {
					attrs, _ := json.Marshal(e.Attrs)
					if len(e.Attrs) == 0 {
						attrs = []byte("-")
					}
					fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", presence.FormatTime(e.TS), e.Seq, e.Type, clipText(string(attrs), 100))
				}
				return tw.Flush()
			})
		},
	}
	addJSONFlag(c)
	return c
}

func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErr(fmt.Errorf("%s takes %s; got %d arguments", c.CommandPath(), what, len(args)))
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
				return usageErr(fmt.Errorf("task state %q: use active, blocked or done", args[0]))
			}
			reason, _ := c.Flags().GetString("reason")
			if to == presence.TaskBlocked && strings.TrimSpace(reason) == "" {
				return withCode(ExitRefused, errors.New("reason_required: blocked requires a reason; pass --reason"))
			}
			return withNode(c, func(ctx context.Context, cl *client, p place) error {
				st, err := currentSession(ctx, c, cl, p)
				if err != nil {
					return err
				}
				res, err := cl.api.Lifecycle(ctx, &api.LifecycleRequest{SessionId: st.SessionID, TaskState: string(to), Reason: reason})
				if err != nil {
					return rpcErr(err, p)
				}
				st, err = decodeState(res.SessionJson)
				if err != nil {
					return err
				}
				if asJSON(c) {
					return writeJSON(c, map[string]any{"recorded": res.Recorded, "note": res.Note, "session": st})
				}
				if !res.Recorded {
					fmt.Fprintln(c.OutOrStdout(), res.Note)
					return nil
				}
				noteLine(c, res.Note)
				fmt.Fprintf(c.OutOrStdout(), "%s is %s; suggested name: %s\n", st.SessionID, st.TaskState, st.SessionName())
				return nil
			})
		},
	}
	c.Flags().String("reason", "", "why (required for blocked)")
	addSessionFlag(c)
	addJSONFlag(c)
	return c
}

func newSetTaskCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "set-task TEXT",
		Short: "set the session's task text (lifecycle-neutral)",
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 || strings.TrimSpace(strings.Join(args, " ")) == "" {
				return usageErr(errors.New("set-task takes the task text; got none"))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			text := strings.Join(args, " ")
			return withNode(c, func(ctx context.Context, cl *client, p place) error {
				st, err := currentSession(ctx, c, cl, p)
				if err != nil {
					return err
				}
				res, err := cl.api.SetTask(ctx, &api.SetTaskRequest{SessionId: st.SessionID, Task: text})
				if err != nil {
					return rpcErr(err, p)
				}
				st, err = decodeState(res.SessionJson)
				if err != nil {
					return err
				}
				if res.Warning != "" {
					fmt.Fprintln(c.ErrOrStderr(), "harn: warning: "+res.Warning)
				}
				if asJSON(c) {
					return writeJSON(c, map[string]any{"warning": res.Warning, "session": st})
				}
				fmt.Fprintf(c.OutOrStdout(), "%s task: %s\n", st.SessionID, st.Task)
				return nil
			})
		},
	}
	addSessionFlag(c)
	addJSONFlag(c)
	return c
}

func newClaimCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "claim PATH...",
		Short: "record write claims: files this session writes",
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErr(errors.New("claim takes one or more paths"))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			paths := make([]string, 0, len(args))
			for _, a := range args {
				abs, err := filepath.Abs(a)
				if err != nil {
					return usageErr(fmt.Errorf("path %q: %v", a, err))
				}
				paths = append(paths, abs)
			}
			return withNode(c, func(ctx context.Context, cl *client, p place) error {
				st, err := currentSession(ctx, c, cl, p)
				if err != nil {
					return err
				}
				res, err := cl.api.Claim(ctx, &api.ClaimRequest{SessionId: st.SessionID, Paths: paths})
				if err != nil {
					return rpcErr(err, p)
				}
				st, err = decodeState(res.SessionJson)
				if err != nil {
					return err
				}
				if asJSON(c) {
					return writeJSON(c, st)
				}
				fmt.Fprintf(c.OutOrStdout(), "%s claims %d paths\n", st.SessionID, len(st.Claims))
				return nil
			})
		},
	}
	addSessionFlag(c)
	addJSONFlag(c)
	return c
}
