package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/harn-dev/harn/cli/daemon"
	"github.com/harn-dev/harn/util/text"
)

// readyInfo is what a started node tells the person who started it.
type readyInfo struct {
	name     string
	boardURL string // with ?token=; "" without a board
	hints    daemon.NodeHints
}

// announce tells the person who started the node where its board is and
// what to run next, as `tailscale up` prints the one URL you need. On a
// terminal: a few plain lines, with the board's token-bearing URL (the
// link that signs a browser in, as `harn web url` prints it). Elsewhere
// (a log file, a collector): one log record, with the board's address
// without its token, since a log file is not kept private, and the
// command that prints the URL with it.
func announce(w io.Writer, terminal bool, log *slog.Logger, r readyInfo) {
	base, _, _ := strings.Cut(r.boardURL, "?")
	if !terminal {
		attrs := []any{"next", r.hints.Next}
		if r.boardURL == "" {
			attrs = append(attrs, "board", "off (--http-port 0)")
		} else {
			attrs = append(attrs, "board", base, "board_signed_in", r.hints.WebURL)
		}
		if r.hints.Env != "" {
			attrs = append(attrs, "agents_env", r.hints.Env)
		}
		log.Info("ready", attrs...)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nharn node %s is up.\n", text.OneLine(r.name))
	if r.boardURL == "" {
		b.WriteString("  board  off (--http-port 0)\n")
	} else {
		fmt.Fprintf(&b, "  board  %s\n         (the link signs a browser in: keep it private; `%s` prints it again)\n", r.boardURL, r.hints.WebURL)
	}
	next := make([]string, len(r.hints.Next))
	for i, c := range r.hints.Next {
		next[i] = "`" + c + "`"
	}
	fmt.Fprintf(&b, "  next   in another terminal: %s\n", strings.Join(next, ", then "))
	if r.hints.Env != "" {
		fmt.Fprintf(&b, "         (an agent's hooks report to this node with %s in its environment)\n", r.hints.Env)
	}
	b.WriteString("  stop   Ctrl+C\n\n")
	io.WriteString(w, b.String())
}
