package operator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/util/text"
)

// ErrRemoteRefused refuses a remote action that did not arrive over the
// mutually authenticated mesh channel, or that the node's policy refuses.
var ErrRemoteRefused = errors.New("node: remote control refused")

// ErrRemoteExec refuses a remote start of a command: a free --exec
// command, or a launcher the target's --remote-exec does not list.
var ErrRemoteExec = errors.New("node: remote start refused")

// Policy is the node's policies for callers on other nodes, in the
// flags' syntax (checked by the node's Config.Validate).
type Policy struct {
	// Control is --remote-control: who may act on this node's agents.
	Control string
	// Watch is --remote-watch: who may watch its hosted terminals.
	Watch string
	// Exec is --remote-exec: the launchers other nodes may start.
	Exec []string
}

// Gate admits callers on other nodes. Policy is read at each call.
type Gate struct {
	Node   string
	Log    *slog.Logger
	Policy func() Policy
	// HasTrust tells whether the mesh has a CA (nil: it has none).
	HasTrust func() bool
}

// Control is the --remote-control policy.
func (g *Gate) Control() trust.RemoteControl {
	rc, _ := trust.ParseRemoteControl(g.Policy().Control)
	return rc
}

// Watch is the --remote-watch policy.
func (g *Gate) Watch() trust.RemoteControl {
	rc, _ := trust.ParseRemoteControl(g.Policy().Watch)
	return rc
}

// Exec lists the launchers other nodes may start here.
func (g *Gate) Exec() []string { return slices.Clone(g.Policy().Exec) }

// Authorize admits a remote task action or approval: only a caller with
// a verified mesh client certificate, and only when this node's
// remote-control policy allows it. Every refusal is logged here, at the
// target.
func (g *Gate) Authorize(ctx context.Context, what string) (trust.Identity, error) {
	id, err := trust.PeerFromContext(ctx)
	if err != nil {
		g.Log.Warn("remote control refused", "action", what, "err", err)
		return id, fmt.Errorf("%w by node %s: the mesh channel is not mutually authenticated (%w); remote task actions need mTLS between the nodes",
			ErrRemoteRefused, g.Node, err)
	}
	// The node's --remote-control policy (default off), applied only to a
	// caller whose certificate the handshake verified: without mutual TLS
	// nobody may act on this node's agents, whatever the policy says.
	if err := g.Control().Allow(id); err != nil {
		g.Log.Warn("remote control refused", "action", what, "caller", id.Name, "err", err)
		return id, fmt.Errorf("%w by node %s: %w", ErrRemoteRefused, g.Node, err)
	}
	return id, nil
}

// Allowed is Authorize's decision without its refusal's log line, for
// reads that answer a refused caller with less rather than nothing (a
// listing polled by every board).
func (g *Gate) Allowed(ctx context.Context) bool {
	id, err := trust.PeerFromContext(ctx)
	if err != nil {
		return false
	}
	return g.Control().Allow(id) == nil
}

// AuthorizeStart admits what a remote start would run: never a command
// the caller wrote (a free --exec), only a launcher of this node that its
// --remote-exec lists. Other ops pass. Every refusal is logged here, at
// the target.
func (g *Gate) AuthorizeStart(id trust.Identity, a tasks.Action) error {
	if a.Op == tasks.OpStart && a.Harn != nil && len(a.Harn.MCP) > 0 {
		g.Log.Warn("remote start refused: harn --mcp commands", "caller", id.String())
		return fmt.Errorf("%w by node %s: a start from another node never runs a command it sends (--mcp NAME=COMMAND); configure MCP servers on node %s itself",
			ErrRemoteExec, g.Node, g.Node)
	}
	if a.Op != tasks.OpStart || (a.Command == "" && a.Launcher == "") {
		return nil
	}
	if a.Command != "" {
		g.Log.Warn("remote start refused: a free command", "caller", id.String())
		return fmt.Errorf("%w by node %s: a start from another node never runs a command it sends (--exec); name a launcher that node %s lists in --remote-exec (--launcher NAME)",
			ErrRemoteExec, g.Node, g.Node)
	}
	return g.Launcher(a.Launcher, id.String())
}

// Launcher admits a remote start of launcher name: it must be in
// --remote-exec.
func (g *Gate) Launcher(name, caller string) error {
	allowed := g.Exec()
	if slices.Contains(allowed, name) {
		return nil
	}
	list := strings.Join(allowed, ",")
	if list == "" {
		list = "none"
	}
	g.Log.Warn("remote start refused: launcher not in --remote-exec", "caller", caller, "launcher", text.Clip(text.OneLine(name), 64))
	return fmt.Errorf("%w by node %s: launcher %q is not in its --remote-exec (%s)", ErrRemoteExec, g.Node,
		text.Clip(text.OneLine(name), 64), list)
}

// AuthorizeAttach admits a remote attach (or a read of this node's
// worktrees): a caller --remote-control allows may type; one only
// --remote-watch allows may watch (readOnly).
func (g *Gate) AuthorizeAttach(ctx context.Context, what string) (trust.Identity, bool, error) {
	id, err := trust.PeerFromContext(ctx)
	if err != nil {
		g.Log.Warn("remote attach refused", "action", what, "err", err)
		return id, false, fmt.Errorf("%w by node %s: the mesh channel is not mutually authenticated (%w)", ErrRemoteRefused, g.Node, err)
	}
	if g.Allowed(ctx) {
		return id, false, nil
	}
	if werr := g.Watch().Allow(id); werr == nil {
		return id, true, nil
	}
	_, err = g.Authorize(ctx, what) // the refusal, logged, naming the policy
	if err == nil {
		err = fmt.Errorf("%w by node %s", ErrRemoteRefused, g.Node)
	}
	return id, false, fmt.Errorf("%w (nor does its --remote-watch name %s)", err, id.Name)
}

// AuthorizeControl decides whether the caller of a cluster gRPC call
// (ctx is the handler's) may act on this node's agents: start, steer,
// cancel, confirm. It returns the caller's verified identity, or a
// *trust.RefusalError wrapping trust.ErrRemoteControl that names the
// caller's certificate, and logs the refusal here. On a mesh without a CA
// no caller has an identity, so every policy refuses.
func (g *Gate) AuthorizeControl(ctx context.Context) (trust.Identity, error) {
	rc := g.Control()
	if g.HasTrust == nil || !g.HasTrust() {
		err := &trust.RefusalError{Err: trust.ErrRemoteControl, Detail: "this mesh has no CA, so callers cannot be told apart; policy is " + rc.String()}
		g.Log.Warn("trust: remote control refused", "caller", "anonymous", "err", err)
		return trust.Identity{}, err
	}
	caller, err := trust.PeerFromContext(ctx)
	if err == nil {
		err = rc.Allow(caller)
	} else {
		err = &trust.RefusalError{Caller: caller, Err: trust.ErrRemoteControl, Detail: err.Error()}
	}
	if err != nil {
		g.Log.Warn("trust: remote control refused", "caller", caller.String(), "err", err)
		return caller, err
	}
	return caller, nil
}
