package cli

import (
	"context"
	"errors"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/util/privfile"
)

// ErrNoBoard means the running node serves no board.
var ErrNoBoard = errors.New("cli: the node serves no web board")

func newWebCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "web",
		Short: "the web board every node serves (--http-port, default 127.0.0.1:7713)",
		Args:  hook.NoArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	c.AddCommand(&cobra.Command{
		Use:   "url",
		Short: "print the local node's board URL, with its token (?token=)",
		Args:  hook.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			u, err := boardURL(hook.PlaceOf(c))
			if err != nil {
				return err
			}
			fmt.Fprintln(c.OutOrStdout(), u)
			return nil
		},
	}, &cobra.Command{
		Use:   "open",
		Short: "open the local node's board in the browser, with its token",
		Long: "Opens the board with xdg-open (open on macOS) through a private redirect file in the data dir, " +
			"so that the token does not show in the process list. Without an opener it prints the URL and says so.",
		Args: hook.NoArgs,
		RunE: runWebOpen,
	})
	return c
}

// boardURL is the URL the running node keeps in its data dir. Only the
// node's own user gets it: the socket must be this user's and be served
// by this user (the checks every client makes), and the data dir is 0700.
func boardURL(p hook.Place) (string, error) {
	dead, err := hook.ProbeSocket(p.Socket)
	if err != nil {
		return "", err
	}
	if dead {
		return "", hook.NoNode(p)
	}
	b, err := os.ReadFile(layout.WebURLPath(p.DataDir))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", hook.WithCode(hook.ExitUnavailable, fmt.Errorf("%w (it runs with --http-port 0); restart it with --http-port 127.0.0.1:7713", ErrNoBoard))
	case errors.Is(err, os.ErrPermission):
		return "", hook.WithCode(hook.ExitPermission, fmt.Errorf("cli: read the board URL: %w; run harn as the user who runs the node", err))
	case err != nil:
		return "", fmt.Errorf("cli: read the board URL: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// webOpenFile is the redirect file `harn web open` hands the browser.
const webOpenFile = "web-open.html"

// openers are the programs that open a file in the browser, by OS.
func openers() []string {
	if runtime.GOOS == "darwin" {
		return []string{"open"}
	}
	return []string{"xdg-open"}
}

func runWebOpen(c *cobra.Command, _ []string) error {
	p := hook.PlaceOf(c)
	u, err := boardURL(p)
	if err != nil {
		return err
	}
	var opener string
	for _, o := range openers() {
		if path, err := exec.LookPath(o); err == nil {
			opener = path
			break
		}
	}
	if opener == "" {
		fmt.Fprintln(c.OutOrStdout(), u)
		fmt.Fprintf(c.ErrOrStderr(), "harn: no %s found to open a browser; open the URL above yourself\n", strings.Join(openers(), " or "))
		return nil
	}
	// The browser gets a file that redirects to the URL: the token in
	// an opener's arguments would show in ps to every local user.
	file := filepath.Join(p.DataDir, webOpenFile)
	page := fmt.Sprintf("<!doctype html>\n<html><head><meta charset=\"utf-8\"><meta name=\"referrer\" content=\"no-referrer\">"+
		"<meta http-equiv=\"refresh\" content=\"0;url=%[1]s\"><title>harn board</title></head>\n"+
		"<body><p>Opening <a href=\"%[1]s\">the harn board</a>.</p></body></html>\n", html.EscapeString(u))
	if err := privfile.Write(file, page); err != nil {
		return fmt.Errorf("cli: write %s: %w", file, err)
	}
	ctx, cancel := context.WithTimeout(c.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, opener, "file://"+file)
	cmd.Stdout, cmd.Stderr = c.ErrOrStderr(), c.ErrOrStderr()
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(c.OutOrStdout(), u)
		return fmt.Errorf("cli: %s failed (%v); open the URL above yourself", filepath.Base(opener), err)
	}
	fmt.Fprintln(c.ErrOrStderr(), "harn: opened the board in the browser")
	return nil
}
