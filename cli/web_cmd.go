package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/node"
)

func init() { commandSet = append(commandSet, newWebCmd) }

// ErrNoBoard means the running node serves no board.
var ErrNoBoard = errors.New("cli: the node serves no web board")

func newWebCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "web",
		Short: "the web board every node serves (--http-port, default 127.0.0.1:7713)",
		Args:  noArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	c.AddCommand(&cobra.Command{
		Use:   "url",
		Short: "print the local node's board URL, with its token when it needs one",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			p := placeOf(c)
			if socketDead(p.Socket) {
				return withCode(ExitUnavailable, fmt.Errorf("%w on %s; start one with `harn node`", ErrNoNode, p.Socket))
			}
			b, err := os.ReadFile(node.WebURLPath(p.DataDir))
			if errors.Is(err, os.ErrNotExist) {
				return withCode(ExitUnavailable, fmt.Errorf("%w (it runs with --http-port 0); restart it with --http-port 127.0.0.1:7713", ErrNoBoard))
			}
			if err != nil {
				return fmt.Errorf("cli: read the board URL: %w", err)
			}
			fmt.Fprintln(c.OutOrStdout(), strings.TrimSpace(string(b)))
			return nil
		},
	})
	return c
}
