//go:build !harn_hook

package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/util/text"
)

// The question a TUI asks before a new session's first prompt when the
// directory's .harn files (MCP servers, agent profiles, skills, hooks)
// would run or load there and this node does not trust them: what each
// runs, and y (trust exactly what was shown) or n (start without them).
// The logic lives here, apart from any screen: askTrust, prompt, answer.

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

// trustAsk is a TUI's state of the question: it is asked once, before
// the first start; q and line are kept while it waits for y or n.
type trustAsk struct {
	asked bool
	q     *trustQuestion
	line  string // the prompt that starts the session once answered
}

// trustMsg carries a check's question (q) or an answer's result (say).
type trustMsg struct {
	q        *trustQuestion
	answered bool
	say      string
	err      error
}

// askTrust checks dir on the node: nil when nothing needs asking (it is
// trusted, has no .harn files, or api has no trust op).
func askTrust(ctx context.Context, node any, dir string) (*trustQuestion, error) {
	ta, ok := node.(dirTrustAPI)
	if !ok || dir == "" {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, chatCallTimeout)
	defer cancel()
	res, err := ta.dirTrust(ctx, &api.DirTrustRequest{Op: "check", Dir: dir})
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

// prompt is the question as screen lines, sanitized: the directory, what
// would run or load, and the keys.
func (q *trustQuestion) prompt() []string {
	out := []string{"trust " + text.Sanitize(q.dir) + "? not trusted on this node; its .harn files would run or load:"}
	for _, l := range q.lines {
		out = append(out, "  "+l)
	}
	if q.refusal != "" {
		return append(out, text.Sanitize(q.refusal)+" | n: start without them")
	}
	return append(out, "y: trust them and start | n: start without them")
}

// answer records a yes: the node trusts exactly the files shown (a file
// changed since is refused); a no records nothing. It says what happened.
func (q *trustQuestion) answer(ctx context.Context, node any, yes bool) (string, error) {
	if !yes {
		return "not trusted: the session starts without " + text.Sanitize(q.dir) + "'s .harn files", nil
	}
	if q.refusal != "" {
		return "", errors.New(q.refusal)
	}
	ta, ok := node.(dirTrustAPI)
	if !ok {
		return "", errors.New("this node has no trust op (a node older than this harn); trust the directory with harn trust add")
	}
	ctx, cancel := context.WithTimeout(ctx, chatCallTimeout)
	defer cancel()
	if _, err := ta.dirTrust(ctx, &api.DirTrustRequest{Op: "add", Dir: q.dir, Digest: q.digest}); err != nil {
		return "", err
	}
	return fmt.Sprintf("trusted %s (digest %s)", text.Sanitize(q.dir), short(q.digest)), nil
}
