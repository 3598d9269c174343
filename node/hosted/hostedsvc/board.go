package hostedsvc

import (
	"context"
	"errors"
	"slices"

	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/board"
	"github.com/harn-dev/harn/presence/adapter/all"
	"github.com/harn-dev/harn/util/text"
)

// The board's hosted pages (board.Hoster): the same calls as the CLI's
// (Hosted.Run, Act, Screen), as the operator board@<this node>, so that
// every target's rules (remote control, --remote-exec, workspace roots)
// apply unchanged.

// Board is the board's hosted pages for operator By (board@<node>).
type Board struct {
	h  *Host
	by string
}

// Board is the board.Hoster of the node's board.
func (h *Host) Board() Board { return Board{h: h, by: "board@" + h.Node} }

var _ board.Hoster = Board{}

func (a Board) Screen(ctx context.Context, session string) ([]string, error) {
	res, err := a.h.hostedScreen(ctx, &api.HostedScreenRequest{Session: session})
	if err != nil {
		return nil, boardErr(err)
	}
	return res.Lines, nil
}

func (a Board) Act(ctx context.Context, op string, r board.ActionRequest) (string, error) {
	res, err := a.h.hostedAct(ctx, &api.HostedActRequest{Session: r.SessionID, Op: op, Text: r.Text}, a.by)
	if err != nil {
		return "", boardErr(err)
	}
	return res.Message, nil
}

func (a Board) Run(ctx context.Context, r board.RunRequest) (string, error) {
	res, err := a.h.hostedRun(ctx, &api.HostedRunRequest{Agent: r.Agent, Node: r.Node, Dir: r.Dir, Worktree: r.Worktree,
		Base: r.Base, Prompt: r.Prompt}, a.by)
	if err != nil {
		return "", boardErr(err)
	}
	return res.Session, nil
}

func (a Board) Targets(ctx context.Context) board.RunTargets {
	t := board.RunTargets{Nodes: []string{a.h.Node}, Agents: append(all.Hostable(), HarnAgent)}
	for l := range a.h.Launchers {
		t.Agents = append(t.Agents, l)
	}
	slices.Sort(t.Agents)
	var others []string
	for _, name := range a.h.Reachable() {
		if name != a.h.Node {
			others = append(others, name)
		}
	}
	slices.Sort(others)
	t.Nodes = append(t.Nodes, others...)
	return t
}

// boardErr is a call's error as the board shows it: its message.
func boardErr(err error) error {
	if st, ok := status.FromError(err); ok {
		return errors.New(text.OneLine(st.Message()))
	}
	return err
}
