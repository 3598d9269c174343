package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/cli/install"
	"github.com/harn-dev/harn/presence/adapter/all"
)

func newHookInstallCmd() *cobra.Command {
	return newInstallCmd("install", "merge harn's hook entries into an agent's settings file", install.Install)
}

func newHookUninstallCmd() *cobra.Command {
	return newInstallCmd("uninstall", "remove harn's hook entries from an agent's settings file", install.Uninstall)
}

func newInstallCmd(use, short string, run func(install.Options) (install.Report, error)) *cobra.Command {
	c := &cobra.Command{
		Use:   use + " AGENT",
		Short: short + " (" + strings.Join(install.Agents(), ", ") + ")",
		Args:  exactArgs(1, "an agent: "+orList(install.Agents())),
		RunE: func(c *cobra.Command, args []string) error {
			if args[0] == "git" {
				return runGitInstall(c, use)
			}
			scope, _ := c.Flags().GetString("scope")
			dry, _ := c.Flags().GetBool("dry-run")
			home, err := os.UserHomeDir()
			if err != nil {
				return err
			}
			wd, err := os.Getwd()
			if err != nil {
				return err
			}
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			yes, _ := c.Flags().GetBool("yes")
			o := install.Options{Agent: args[0], Scope: scope, Home: home, ProjectDir: wd,
				Command: hookBinary(exe, exec.LookPath), Hook: hookOnlyBinary(exe, exec.LookPath), DryRun: dry, Yes: yes, Getenv: os.Getenv, Now: hook.Clk.Now()}
			if err := hook.RemoteApproveOptions(c, &o); err != nil {
				return err
			}
			rep, err := run(o)
			switch {
			case errors.Is(err, install.ErrUnknownAgent), errors.Is(err, install.ErrBadScope), errors.Is(err, install.ErrBadSettings):
				return hook.UsageErr(err)
			case errors.Is(err, install.ErrCommentsLost):
				return hook.WithCode(hook.ExitRefused, err)
			case err != nil:
				return err
			}
			if hook.AsJSON(c) {
				return hook.WriteJSON(c, map[string]any{"path": rep.Path, "changed": rep.Changed,
					"added": rep.Added, "replaced": rep.Replaced, "removed": rep.Removed,
					"lost_comment_lines": rep.LostComments, "backup": rep.Backup, "dry_run": dry,
					"instructions": map[string]any{"path": rep.Instructions.Path, "changed": rep.Instructions.Changed}})
			}
			fmt.Fprint(c.OutOrStdout(), rep.Summary())
			if dry {
				fmt.Fprint(c.OutOrStdout(), install.Diff(rep.Path, rep.Before, rep.After),
					install.Diff(rep.Instructions.Path, rep.Instructions.Before, rep.Instructions.After))
			}
			return nil
		},
	}
	c.Flags().String("scope", "user", "user (your home) or project (the current directory)")
	c.Flags().Bool("dry-run", false, "print what would change and write nothing")
	hook.AddRemoteApproveFlags(c, use)
	c.Flags().Bool("yes", false, "write even when comments inside \"hooks\" of a settings file with comments ("+strings.Join(jsoncAgents(), ", ")+") cannot be kept")
	hook.AddJSONFlag(c)
	return c
}

// hookBinary is the binary the hook command names: "harn" when that name
// on PATH is this very binary, else its absolute path.
func hookBinary(exe string, lookPath func(string) (string, error)) string {
	p, err := lookPath(install.BareCommand)
	if err != nil {
		return exe
	}
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	a, errA := os.Stat(p)
	b, errB := os.Stat(exe)
	if errA != nil || errB != nil || !os.SameFile(a, b) {
		return exe
	}
	return install.BareCommand
}

// hookOnlyBinary is the binary the hook entries run: harn-hook beside exe
// (bare when PATH finds that very file), or "" (the hooks run harn
// itself) when there is none.
func hookOnlyBinary(exe string, lookPath func(string) (string, error)) string {
	h := filepath.Join(filepath.Dir(exe), install.BareHookCommand)
	if fi, err := os.Stat(h); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return ""
	}
	if p, err := lookPath(install.BareHookCommand); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		if a, err := os.Stat(p); err == nil {
			if b, err := os.Stat(h); err == nil && os.SameFile(a, b) {
				return install.BareHookCommand
			}
		}
	}
	return h
}

// orList is "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// jsoncAgents are the installable agents whose settings files have
// comments (adapter.SettingsSpec.JSONC).
func jsoncAgents() []string {
	var out []string
	for _, n := range install.Agents() {
		if is, _ := all.Install(n); is.Settings.JSONC {
			out = append(out, n)
		}
	}
	return out
}
