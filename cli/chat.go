package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/cli/tui"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/tasks/taskapi"
	"github.com/harn-dev/harn/node/tasks/taskwire"
	"github.com/harn-dev/harn/util/clock"
)

// `harn chat [--session ID]`, `harn` with no arguments, and `harn attach
// SESSION`: the thin TUI of harn's own agent. It holds no session state:
// it reads a session's loop events from the node that owns it (the
// history op of the task RPC, a long poll), paints them, and sends the
// keys as task actions through the same path as `harn task`. Killing it
// loses nothing; run again, it paints the same screen from the node.

// Chat bounds.
const (
	// chatCallTimeout bounds the TUI's first reads.
	chatCallTimeout = 12 * time.Second
	// nodeStartWait bounds the wait for a node the TUI started.
	nodeStartWait = 15 * time.Second
)

// Environment of a new chat session without flags (`harn` alone).
const (
	envModel       = "HARN_MODEL"
	envProviderURL = "HARN_PROVIDER_URL"
	envProvider    = "HARN_PROVIDER"
)

// ErrChat means the TUI could not attach.
var ErrChat = errors.New("chat")

func newChatCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "chat [--session ID]",
		Short: "the TUI of harn's own agent on the local node (as `harn` alone)",
		Long: `chat is the TUI of harn's own agent. It attaches to the local node, starting it
if none runs (as a hook does), and to a harn session: --session ID, else the
one picked from this directory's sessions (newest first), else a new one at
the first prompt (its model from --model, HARN_MODEL or /model; its provider
from --provider-url or HARN_PROVIDER_URL). The session lives in the node:
kill the TUI and run it again, and the screen comes back from the node's
history.

` + tui.Help,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			s, _ := c.Flags().GetString("session")
			return runChat(c, s, false)
		},
	}
	c.Flags().String("session", "", "attach to this harn session (an id, prefix or name)")
	addHarnFlags(c)
	addGrantFlags(c)
	return c
}

func newAttachCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "attach SESSION",
		Short: "sit down at a hosted agent's terminal, or attach the TUI to a harn session, on any node, through its owner",
		Long: `attach opens, on a hosted session (harn run), that agent's own terminal, full
screen: what it draws comes back, what you type goes in, resizes follow.
Ctrl+] detaches and leaves the agent running. Several people may attach at
once; --read-only watches without typing. On harn's own sessions it opens the
TUI of harn chat. A session is named by id, prefix or name as other commands
take sessions. Reads and keys go to the session's owner through the local
node, under the owner's --remote-control policy: a caller it does not permit
is refused (exit 16); one only its --remote-watch names may watch.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			ro, _ := c.Flags().GetBool("read-only")
			if err := attachHosted(c, args[0], ro); !errors.Is(err, errNotHosted) {
				return err
			}
			return runChat(c, args[0], true)
		},
	}
	c.Flags().Bool("read-only", false, "watch a hosted terminal without typing into it")
	return c
}

// nodeChat is the node as the TUI sees it (tui.Node): task actions and
// the roster.
type nodeChat struct {
	cl *client
	p  hook.Place
}

func (n nodeChat) Task(ctx context.Context, node string, a taskwire.Action) (taskwire.Result, error) {
	res, err := n.cl.api.Task(ctx, &api.TaskRequest{Action: taskapi.ActionToAPI(a), Node: node})
	if err != nil {
		return taskwire.Result{}, taskErr(err, n.p)
	}
	return taskapi.ResultFromAPI(res.Result)
}

func (n nodeChat) Sessions(ctx context.Context) ([]*api.SessionRow, error) {
	res, err := n.cl.api.List(ctx, &api.ListRequest{All: true})
	if err != nil {
		return nil, hook.RpcErr(err, n.p)
	}
	return res.GetRows(), nil
}

// ensureNode starts the local node when none answers, and waits for it:
// the one command besides a hook that starts a node, since the TUI is
// how a person starts harn's own agent.
func ensureNode(ctx context.Context, p hook.Place) error {
	dead, err := hook.ProbeSocket(p.Socket)
	if err != nil || !dead {
		return err
	}
	if err := hook.StartNode(p); err != nil {
		return fmt.Errorf("%w: could not start a node: %w", ErrChat, err)
	}
	deadline := hook.Clk.Now().Add(nodeStartWait)
	for hook.Clk.Now().Before(deadline) {
		if dead, err := hook.ProbeSocket(p.Socket); err != nil {
			return err
		} else if !dead {
			return nil
		}
		if !clock.Sleep(hook.Clk, 50*time.Millisecond, ctx.Done()) {
			return ctx.Err()
		}
	}
	return hook.NoNode(p)
}

// runChat runs the TUI on session handle ("" for the picker of this
// directory's sessions, or a new one); attach needs the handle and never
// starts a node or a session.
func runChat(c *cobra.Command, handle string, attach bool) error {
	ctx, stop := signal.NotifyContext(c.Context(), syscall.SIGTERM)
	defer stop()
	p := hook.PlaceOf(c)
	if !attach {
		if err := ensureNode(ctx, p); err != nil {
			return err
		}
	}
	cl, err := connect(ctx, p, 5*time.Second)
	if err != nil {
		return err
	}
	defer cl.Close()
	na := nodeChat{cl: cl, p: p}
	cfg := tui.DefaultConfig()
	cfg.Node, cfg.ErrText, cfg.Clock = na, hook.UserText, hook.Clk
	wd, _ := os.Getwd()
	cfg.Dir = wd
	if !attach {
		if cfg.Start, err = chatStart(c, wd); err != nil {
			return err
		}
		if handle == "" {
			cctx, cancel := context.WithTimeout(ctx, chatCallTimeout)
			rows, err := na.Sessions(cctx)
			cancel()
			if err != nil {
				return err
			}
			cfg.Picker = tui.SessionsOf(rows, wd)
			cfg.Prompts = trustPrompts(ctx, na, wd) // may this directory's .harn files run? (dirtrust_ask.go)
		}
	}
	if handle != "" {
		// The first read resolves the session at its owner, and is where
		// the owner's policy refuses a caller it does not permit.
		cctx, cancel := context.WithTimeout(ctx, chatCallTimeout)
		r, err := na.Task(cctx, "", taskwire.Action{Op: taskwire.OpHistory, Session: handle})
		cancel()
		if err != nil {
			return err
		}
		cfg.Session, cfg.Owner, cfg.First = r.Session, r.Node, &r
	}
	out := c.OutOrStdout()
	if !isTerminal(out) {
		return hook.UsageErr(fmt.Errorf("%w: the TUI needs a terminal; use `harn ask` without one", ErrChat))
	}
	return tui.Run(ctx, cfg, c.InOrStdin(), out)
}

// chatStart is the start action of a new session from the flags (chat)
// or the environment (`harn` alone), without its model when none is
// named (the TUI's /model names it).
func chatStart(c *cobra.Command, wd string) (*taskwire.Action, error) {
	o := &taskwire.HarnOptions{}
	flag := func(name string) string {
		if f := c.Flags().Lookup(name); f != nil {
			return f.Value.String()
		}
		return ""
	}
	o.Provider, o.URL, o.Model = flag("provider"), flag("provider-url"), flag("model")
	if o.Model == "" {
		o.Model = os.Getenv(envModel)
	}
	if o.URL == "" {
		o.URL = os.Getenv(envProviderURL)
	}
	if o.Provider == "" {
		o.Provider = os.Getenv(envProvider) // else the node's own (--provider, default openai)
	}
	if c.Flags().Lookup("mcp") != nil {
		o.MCP, _ = c.Flags().GetStringArray("mcp")
		o.ContextWindow, _ = c.Flags().GetInt("context-window")
		o.MaxOutput, _ = c.Flags().GetInt("max-output")
	}
	k, err := providerKey()
	if err != nil {
		return nil, err
	}
	o.Key = k
	a := &taskwire.Action{Op: taskwire.OpStart, Agent: taskwire.AgentHarn, Harn: o, Workdir: wd}
	if c.Flags().Lookup("profile") != nil {
		if a.Grants, err = grantsOf(c); err != nil {
			return nil, err
		}
	}
	return a, nil
}
