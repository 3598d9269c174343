package cli

import (
	"context"
	"errors"
	"fmt"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/cli/tui"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/util/text"
)

// The question the TUI asks when it may start a new session in a
// directory whose .harn files (MCP servers, agent profiles, skills, hooks)
// would run or load there and this node does not trust them: what each
// runs, and y (trust exactly what was shown) or n (sessions start without
// them). The logic lives here, apart from the screen (askTrust, answer);
// trustPrompts hands it to the TUI as a tui.Prompt.

// dirTrustAPI is the node's trust op (nodeChat has it).
type dirTrustAPI interface {
	dirTrust(ctx context.Context, req *api.DirTrustRequest) (*api.DirTrustResponse, error)
}

func (n nodeChat) dirTrust(ctx context.Context, req *api.DirTrustRequest) (*api.DirTrustResponse, error) {
	res, err := n.cl.api.DirTrust(ctx, req)
	return res, dirTrustErr(err, n.p)
}

// trustQuestion is one directory's question.
type trustQuestion struct {
	dir     string
	digest  string   // of the files shown: a yes trusts these, or nothing
	lines   []string // what would run or load
	refusal string   // why a yes cannot trust it here, with the command that can
}

// askTrust checks dir on the node: nil when nothing needs asking (it is
// trusted, or has no .harn files).
func askTrust(ctx context.Context, node dirTrustAPI, dir string) (*trustQuestion, error) {
	ctx, cancel := context.WithTimeout(ctx, chatCallTimeout)
	defer cancel()
	res, err := node.dirTrust(ctx, &api.DirTrustRequest{Op: "check", Dir: dir})
	if err != nil {
		return nil, err
	}
	ck := res.GetCheck()
	if ck.GetTrusted() || ck.GetEmpty() {
		return nil, nil
	}
	q := &trustQuestion{dir: ck.GetDir(), digest: ck.GetDigest(), lines: trustLines(ck)}
	switch {
	case ck.GetUnreadable() != "":
		q.refusal = "its .harn files cannot be trusted: " + text.OneLine(ck.GetUnreadable())
	case ck.GetOwner() != "":
		q.refusal = text.OneLine(ck.GetOwner()) + "; trust it only if you trust that user: `" + text.OneLine(ck.GetCommand()) + "`"
	}
	return q, nil
}

// prompt is the question as a y/n panel's title and lines.
func (q *trustQuestion) prompt() (string, []string) {
	lines := append([]string{"not trusted on this node; its .harn files would run or load in a session here:"}, q.lines...)
	if q.refusal != "" {
		return "trust " + q.dir + "?", append(lines, q.refusal, "n: sessions start without them")
	}
	return "trust " + q.dir + "?", append(lines, "y: trust them (the sessions you start here run them) | n: sessions start without them")
}

// answer records a yes: the node trusts exactly the files shown (a file
// changed since is refused); a no records nothing. It says what happened.
func (q *trustQuestion) answer(ctx context.Context, node dirTrustAPI, yes bool) (string, error) {
	if !yes {
		return "not trusted: sessions here start without " + text.Sanitize(q.dir) + "'s .harn files", nil
	}
	if q.refusal != "" {
		return "", errors.New(q.refusal)
	}
	ctx, cancel := context.WithTimeout(ctx, chatCallTimeout)
	defer cancel()
	if _, err := node.dirTrust(ctx, &api.DirTrustRequest{Op: "add", Dir: q.dir, Digest: q.digest}); err != nil {
		return "", err
	}
	return fmt.Sprintf("trusted %s (digest %s)", text.Sanitize(q.dir), short(q.digest)), nil
}

// trustPrompts is the TUI's question about dir, asked before anything
// starts (tui.Config.Prompts): none when dir is trusted, has nothing to
// trust, or the check fails (the node refuses to load untrusted files
// anyway). An answer that fails comes back as a second prompt saying why.
func trustPrompts(ctx context.Context, node dirTrustAPI, dir string) <-chan tui.Prompt {
	q, err := askTrust(ctx, node, dir)
	if err != nil || q == nil {
		return nil
	}
	ch := make(chan tui.Prompt, 2)
	title, lines := q.prompt()
	ch <- tui.Prompt{Title: title, Lines: lines, Answer: func(yes bool) tea.Cmd {
		return func() tea.Msg {
			if _, err := q.answer(ctx, node, yes); err != nil {
				select {
				case ch <- tui.Prompt{Title: "could not trust " + q.dir, Lines: []string{text.OneLine(hook.UserText(err))}}:
				default:
				}
			}
			return nil
		}
	}}
	return ch
}
