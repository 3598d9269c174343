package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/desktop"
	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/text"
)

func newClaudeDesktopCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "claude-desktop",
		Short: "Claude Desktop's sidebar of Claude Code sessions: sessions, mirror, tidy",
		Long: `Claude Desktop keeps one file per sidebar entry under
<data-dir>/claude-code-sessions/<account>/<env>/local_<id>.json. These commands
list the entries with the harn lifecycle of each session, copy entries so that
every account lists them all, and archive the entries whose task is done.

Under claude-desktop, --data-dir names Claude Desktop's data dir (default
~/Library/Application Support/Claude on macOS, ~/.config/Claude on Linux).
harn's own state dir comes from HARN_DATA_DIR or the config file, and --socket
still names the node.

mirror and tidy are dry runs unless --yes is given. Quit Claude Desktop before
--yes, or restart it after, so that it reads the files again.`,
		Example: `  harn claude-desktop sessions
  harn claude-desktop tidy              # show what would be archived
  harn claude-desktop tidy --yes
  harn claude-desktop mirror --yes --data-dir ~/.config/Claude`,
		Args: hook.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	c.PersistentFlags().String("data-dir", "", "Claude Desktop's data dir (default ~/Library/Application Support/Claude on macOS, ~/.config/Claude on Linux)")
	c.AddCommand(newDesktopSessionsCmd(), newDesktopMirrorCmd(), newDesktopTidyCmd())
	return c
}

// desktopDir is Claude Desktop's data dir: --data-dir when given on the
// command line, else the system's default. The environment and config file
// fill --data-dir with harn's own state dir, so only the command line
// counts here.
func desktopDir(c *cobra.Command) (string, error) {
	if f := c.Flags().Lookup("data-dir"); f != nil && f.Changed && f.Value.String() != "" {
		return filepath.Abs(f.Value.String())
	}
	home, _ := os.UserHomeDir()
	d, err := desktop.DefaultDataDir(runtime.GOOS, home, os.Getenv("XDG_CONFIG_HOME"))
	if err != nil {
		return "", hook.UsageErr(err)
	}
	return d, nil
}

// desktopNodePlace is where the claude-desktop commands find the node:
// harn's state dir from HARN_DATA_DIR or the config file (--data-dir is
// Claude Desktop's here), and --socket.
func desktopNodePlace(c *cobra.Command) hook.Place {
	dd := ""
	if v, ok := os.LookupEnv(hook.EnvName("data-dir")); ok {
		dd = v
	} else if file, err := hook.LoadConfigFile(c); err == nil {
		dd, _ = file.Lookup("data-dir")
	}
	return hook.PlaceAt(c, dd)
}

// scanDesktop scans the data dir and prints its warnings (malformed
// entries, unreadable folders) to stderr.
func scanDesktop(c *cobra.Command) (*desktop.Tree, error) {
	dir, err := desktopDir(c)
	if err != nil {
		return nil, err
	}
	t, err := desktop.Scan(dir)
	if err != nil {
		return nil, hook.UsageErr(err)
	}
	for _, w := range t.Warnings {
		fmt.Fprintln(c.ErrOrStderr(), "harn: warning: "+text.OneLine(w.Error()))
	}
	return t, nil
}

// nodeLifecycles looks sessions up through the local node.
type nodeLifecycles struct {
	cl *client
	p  hook.Place
}

// lookupTimeout bounds one session lookup (a remote owner may be slow).
const lookupTimeout = 10 * time.Second

func (n nodeLifecycles) Lifecycle(ctx context.Context, id string) (desktop.Lifecycle, error) {
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	res, err := n.cl.api.Get(ctx, &api.SessionRequest{Id: id})
	if err != nil {
		// Unknown, or only a prefix of several sessions: not this one.
		if errors.Is(err, api.ErrNotFound) || errors.Is(err, api.ErrAmbiguous) {
			return desktop.Lifecycle{}, nil
		}
		return desktop.Lifecycle{}, hook.RpcErr(err, n.p)
	}
	st, err := stateOf(res.GetSession())
	if err != nil {
		return desktop.Lifecycle{}, fmt.Errorf("the node's answer for %s does not decode: %w", id, err)
	}
	if st.SessionID != id { // a prefix match of a longer id
		return desktop.Lifecycle{}, nil
	}
	// Before any lifecycle event the fold keeps task_state_updated_at at
	// the session's start (presence/fold.go); a declaration moves it.
	declared := st.TaskState != presence.TaskActive || !st.TaskStateUpdatedAt.Equal(st.StartedAt)
	return desktop.Lifecycle{Known: true, TaskState: string(st.TaskState), Declared: declared}, nil
}

// noLifecycles knows no session; it serves a tree with no entries, which
// needs no node.
type noLifecycles struct{}

func (noLifecycles) Lifecycle(context.Context, string) (desktop.Lifecycle, error) {
	return desktop.Lifecycle{}, nil
}

// withLifecycles connects to the node (starting one if needed, as every
// command does) and runs fn with its lookups. A tree with no entries
// connects to nothing.
func withLifecycles(c *cobra.Command, t *desktop.Tree, fn func(ctx context.Context, lc desktop.Lifecycles) error) error {
	ctx := c.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	if len(t.Entries) == 0 {
		return fn(ctx, noLifecycles{})
	}
	p := desktopNodePlace(c)
	cl, err := connect(ctx, p, 5*time.Second)
	if err != nil {
		return err
	}
	defer cl.Close()
	return fn(ctx, nodeLifecycles{cl: cl, p: p})
}

// desktopRowJSON is an entry in --json output.
type desktopRowJSON struct {
	Account           string `json:"account"`
	Env               string `json:"env"`
	File              string `json:"file"`
	Path              string `json:"path"`
	CLISessionID      string `json:"cli_session_id"`
	Title             string `json:"title"`
	Cwd               string `json:"cwd"`
	Archived          bool   `json:"archived"`
	HarnKnown         bool   `json:"harn_session_known"`
	TaskState         string `json:"task_state,omitempty"`
	LifecycleDeclared bool   `json:"lifecycle_declared"`
}

func rowJSON(r desktop.Row) desktopRowJSON {
	return desktopRowJSON{Account: r.Account, Env: r.Env, File: r.Name, Path: r.Path,
		CLISessionID: r.CLISessionID, Title: r.Title, Cwd: r.Cwd, Archived: r.Archived,
		HarnKnown: r.Lifecycle.Known, TaskState: r.Lifecycle.TaskState, LifecycleDeclared: r.Lifecycle.Declared}
}

func newDesktopSessionsCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "sessions",
		Short: "list Claude Desktop's Claude Code entries across accounts, with each session's harn lifecycle",
		Example: `  harn claude-desktop sessions
  harn claude-desktop sessions --json --data-dir ~/.config/Claude`,
		Args: hook.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			t, err := scanDesktop(c)
			if err != nil {
				return err
			}
			return withLifecycles(c, t, func(ctx context.Context, lc desktop.Lifecycles) error {
				rows, err := desktop.Lookup(ctx, t, lc)
				if err != nil {
					return err
				}
				if hook.AsJSON(c) {
					out := make([]desktopRowJSON, 0, len(rows))
					for _, r := range rows {
						out = append(out, rowJSON(r))
					}
					return hook.WriteJSON(c, out)
				}
				return printDesktopRows(c.OutOrStdout(), t.Dir, rows)
			})
		},
	}
	hook.AddJSONFlag(c)
	return c
}

func printDesktopRows(w io.Writer, dir string, rows []desktop.Row) error {
	if len(rows) == 0 {
		fmt.Fprintf(w, "no Claude Code entries under %s\n", text.OneLine(filepath.Join(dir, desktop.SessionsDir)))
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ACCOUNT\tSESSION\tTASK STATE\tARCHIVED\tTITLE\tCWD")
	for _, r := range rows {
		state := "-"
		if r.Lifecycle.Known {
			state = r.Lifecycle.TaskState
		}
		arch := "-"
		if r.Archived {
			arch = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", text.Clip(text.Cell(r.Account), 14),
			text.Clip(text.Cell(r.CLISessionID), 18), text.Cell(state), arch,
			text.Clip(text.Cell(r.Title), 40), text.Clip(text.Cell(r.Cwd), 20))
	}
	return tw.Flush()
}

func addYesFlag(c *cobra.Command, what string) {
	c.Flags().Bool("yes", false, what+" (without it, only show what would be done)")
}

// mirrorCopyJSON is a copy in mirror's --json output.
type mirrorCopyJSON struct {
	From         string `json:"from"`
	To           string `json:"to"`
	CLISessionID string `json:"cli_session_id"`
	Done         bool   `json:"done"`
	Error        string `json:"error,omitempty"`
}

func newDesktopMirrorCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "mirror",
		Short: "copy entries across account folders so that every account lists every session (dry run unless --yes)",
		Example: `  harn claude-desktop mirror          # show the copies
  harn claude-desktop mirror --yes`,
		Args: hook.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			yes, _ := c.Flags().GetBool("yes")
			t, err := scanDesktop(c)
			if err != nil {
				return err
			}
			plan := desktop.PlanMirror(t)
			w, ew := c.OutOrStdout(), c.ErrOrStderr()
			for _, s := range plan.Skipped {
				fmt.Fprintf(ew, "harn: warning: not mirrored %s: %s\n", text.OneLine(s.Path), text.OneLine(s.Reason))
			}
			var out []mirrorCopyJSON
			failed := 0
			for _, cp := range plan.Copies {
				j := mirrorCopyJSON{From: cp.From.Path, To: cp.To, CLISessionID: cp.From.CLISessionID}
				verb := "would copy"
				if yes {
					if err := cp.Apply(); err != nil {
						failed++
						j.Error = err.Error()
						fmt.Fprintln(ew, "harn: warning: "+text.OneLine(err.Error()))
						out = append(out, j)
						continue
					}
					j.Done, verb = true, "copied"
				}
				out = append(out, j)
				if !hook.AsJSON(c) {
					fmt.Fprintf(w, "%s  %s -> %s/%s  %s\n", verb, text.OneLine(cp.From.Rel()),
						text.OneLine(cp.Account), text.OneLine(cp.Env), text.Clip(text.OneLine(cp.From.Title), 60))
				}
			}
			if hook.AsJSON(c) {
				if out == nil {
					out = []mirrorCopyJSON{}
				}
				if err := hook.WriteJSON(c, out); err != nil {
					return err
				}
			} else {
				summary(w, yes, len(plan.Copies), len(plan.Copies)-failed, "every account already lists every session",
					"copied %d entries", "dry run: %d entries to copy; pass --yes to copy them")
			}
			return writesFailed(failed, len(plan.Copies), "copies")
		},
	}
	addYesFlag(c, "make the copies")
	hook.AddJSONFlag(c)
	return c
}

// tidyJSON is an entry in tidy's --json output.
type tidyJSON struct {
	desktopRowJSON
	Archive bool   `json:"archive"`
	Reason  string `json:"reason"`
	Done    bool   `json:"done"`
	Error   string `json:"error,omitempty"`
}

func newDesktopTidyCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "tidy",
		Short: "archive the entries whose session's latest lifecycle event is done (dry run unless --yes)",
		Long: `tidy archives an entry when the harn session it maps to (by cliSessionId) has
done as its latest lifecycle event. A [BLOCKED] title never qualifies, and a
title never overrides the lifecycle. A [DONE] title whose session has no
lifecycle evidence is skipped unless --include-legacy-prefix is given. Only
the isArchived field changes; each file is rewritten atomically.`,
		Example: `  harn claude-desktop tidy
  harn claude-desktop tidy --yes
  harn claude-desktop tidy --yes --include-legacy-prefix`,
		Args: hook.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			yes, _ := c.Flags().GetBool("yes")
			legacy, _ := c.Flags().GetBool("include-legacy-prefix")
			t, err := scanDesktop(c)
			if err != nil {
				return err
			}
			return withLifecycles(c, t, func(ctx context.Context, lc desktop.Lifecycles) error {
				ds, err := desktop.PlanTidy(ctx, t, lc, legacy)
				if err != nil {
					return err
				}
				return runTidy(c, ds, yes)
			})
		},
	}
	addYesFlag(c, "archive the entries")
	c.Flags().Bool("include-legacy-prefix", false, "also archive entries titled [DONE] whose session has no lifecycle evidence")
	hook.AddJSONFlag(c)
	return c
}

func runTidy(c *cobra.Command, ds []desktop.Decision, yes bool) error {
	w, ew := c.OutOrStdout(), c.ErrOrStderr()
	out := make([]tidyJSON, 0, len(ds))
	planned, failed := 0, 0
	for _, d := range ds {
		j := tidyJSON{desktopRowJSON: rowJSON(d.Row), Archive: d.Archive, Reason: d.Reason}
		line := ""
		switch {
		case d.Archive:
			planned++
			line = "would archive"
			if yes {
				if err := desktop.Archive(d.Entry); err != nil {
					failed++
					j.Error = err.Error()
					fmt.Fprintln(ew, "harn: warning: "+text.OneLine(err.Error()))
					out = append(out, j)
					continue
				}
				j.Done, line = true, "archived"
			}
		case !d.Archived && hasPrefix(d.Title):
			// Say why an entry a reader might expect to go stays.
			line = "kept"
		}
		out = append(out, j)
		if line != "" && !hook.AsJSON(c) {
			fmt.Fprintf(w, "%-13s  %s  %s  (%s)\n", line, text.OneLine(d.Rel()),
				text.Clip(text.OneLine(d.Title), 60), text.OneLine(d.Reason))
		}
	}
	if hook.AsJSON(c) {
		if err := hook.WriteJSON(c, out); err != nil {
			return err
		}
	} else {
		summary(w, yes, planned, planned-failed, "nothing to archive",
			"archived %d entries", "dry run: %d entries to archive; pass --yes to archive them")
	}
	return writesFailed(failed, planned, "archives")
}

func hasPrefix(title string) bool {
	t := strings.TrimSpace(title)
	return strings.HasPrefix(t, desktop.PrefixDone) || strings.HasPrefix(t, desktop.PrefixBlocked)
}

// summary prints the closing line of mirror and tidy: none when there
// is nothing to do, done after --yes (with the count written), dry
// otherwise (with the count planned).
func summary(w io.Writer, yes bool, planned, written int, none, done, dry string) {
	switch {
	case planned == 0:
		fmt.Fprintln(w, none)
	case yes:
		fmt.Fprintf(w, done+"\n", written)
	default:
		fmt.Fprintf(w, dry+"\n", planned)
	}
}

// ErrDesktopWrites means some writes of mirror or tidy failed.
var ErrDesktopWrites = errors.New("claude-desktop: some writes failed")

func writesFailed(failed, total int, what string) error {
	if failed == 0 {
		return nil
	}
	return hook.WithCode(hook.ExitError, fmt.Errorf("%w: %d of %d %s (listed above); run the command again", ErrDesktopWrites, failed, total, what))
}

// newDesktopAppCmd is the command of the desktop app's sidebar, as the
// root wires it.
func newDesktopAppCmd() *cobra.Command { return newClaudeDesktopCmd() }
