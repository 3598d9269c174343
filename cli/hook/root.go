// Package hook is the agents' hook and the command line's base that every
// harn binary shares: its room is what `harn-hook hook AGENT` needs and no
// more — the root command and its errors and exit codes, finding the node
// (flags, environment, config file), dialing or starting it over the
// local wire, output as text or --json, and the hook itself. harn-hook
// links this package alone; package cli (harn) sets its whole tree, and
// package cli/daemon (harnd) its own, with SetCommands. os.Exit is never called here; Main returns the code.
package hook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Set by the linker (see Makefile).
var (
	version = "dev"
	commit  = "unknown"
)

func init() {
	// A plain `go build` carries the commit in its build info; the
	// Makefile's linker flags take precedence.
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	if version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		version = bi.Main.Version
	}
	if commit != "unknown" {
		return
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
			if len(commit) > 12 {
				commit = commit[:12]
			}
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && commit != "unknown" {
		commit += "-dirty"
	}
}

// Version is the build's version string.
func Version() string { return version }

// Commit is the commit the build came from.
func Commit() string { return commit }

// Main runs the command line and returns the process exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return Run(context.Background(), args, stdin, stdout, stderr)
}

// run is Main in ctx (which holds harnd's Daemon, in harnd).
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var root *cobra.Command
	if len(args) > 0 && commands.SoleRoots[args[0]] != nil {
		root = buildRoot(stdin, stdout, stderr, commands.SoleRoots[args[0]])
	} else {
		root = NewRoot(stdin, stdout, stderr)
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(withRawArgs(ctx, args))
	if err == nil {
		return ExitOK
	}
	code := ExitCode(err)
	var silent *SilentError
	if !errors.As(err, &silent) {
		fmt.Fprintln(stderr, "harn: "+UserText(err))
	}
	// A hook never fails its agent, which reads exit 2 as "block this
	// action": bad flags, environment or config still exit 0.
	if cmd != nil && cmd.Name() == "hook" && cmd.Parent() == root {
		return ExitOK
	}
	return code
}

func NewRoot(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	return buildRoot(stdin, stdout, stderr, nil)
}

// buildRoot builds the root command with every command, or with only the
// one only builds.
func buildRoot(stdin io.Reader, stdout, stderr io.Writer, only func() *cobra.Command) *cobra.Command {
	root := &cobra.Command{
		Use:           "harn",
		Short:         "presence and agent mesh for AI coding agents",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return UsageErr(fmt.Errorf("unknown command %q%s; run `harn --help` for the list", args[0], didYouMean(c.SuggestionsFor(args[0]))))
			}
			return nil
		},
		// On a terminal, harn alone is the TUI of harn's own agent
		// (harn chat); elsewhere it prints the help.
		RunE: func(c *cobra.Command, _ []string) error {
			if only == nil {
				return commands.BareRoot(c)
			}
			return c.Help()
		},
	}
	addPlaceFlags(root)
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error { return ApplySettings(c) }
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return UsageErr(fmt.Errorf("%w%s", err, flagSuggestion(c, err)))
	})
	if only != nil {
		root.AddCommand(only())
	} else {
		root.AddCommand(newVersionCmd())
		for _, add := range commands.Set() {
			root.AddCommand(add())
		}
		// cobra adds help and completion when it runs; add them now so
		// that they get examples and suggestions like the rest.
		root.InitDefaultHelpCmd()
		root.InitDefaultCompletionCmd()
	}
	WalkCommands(root, func(c *cobra.Command) {
		c.SuggestionsMinimumDistance = suggestDistance
		usageArgs(c)
	})
	commands.ApplyExamples(root)
	return root
}

// suggestDistance is the largest edit distance at which a typo gets a
// suggestion.
const suggestDistance = 2

// didYouMean formats suggestions: ` (did you mean "list"?)`, or "".
func didYouMean(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf(" (did you mean %q?)", s[0])
	}
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = strconv.Quote(x)
	}
	return " (did you mean " + strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1] + "?)"
}

// sameInitial keeps the suggestions that begin as typed does, when some
// do: a typo rarely changes the first letter ("lsit" is list, not wait).
func sameInitial(typed string, s []string) []string {
	var out []string
	for _, x := range s {
		if typed != "" && x != "" && strings.EqualFold(x[:1], typed[:1]) {
			out = append(out, x)
		}
	}
	if len(out) == 0 {
		return s
	}
	return out
}

// flagSuggestion names the flags of c closest to the unknown flag err
// complains about, as didYouMean does.
func flagSuggestion(c *cobra.Command, err error) string {
	msg := err.Error()
	var typed string
	switch {
	case strings.HasPrefix(msg, "unknown flag: --"):
		typed = strings.TrimPrefix(msg, "unknown flag: --")
		typed, _, _ = strings.Cut(typed, "=")
	default:
		return ""
	}
	var out []string
	seen := map[string]bool{}
	visit := func(f *pflag.Flag) {
		if seen[f.Name] || f.Hidden {
			return
		}
		seen[f.Name] = true
		if EditDistance(typed, f.Name) <= suggestDistance || (len(typed) >= 3 && strings.HasPrefix(f.Name, typed)) {
			out = append(out, "--"+f.Name)
		}
	}
	c.Flags().VisitAll(visit)
	c.InheritedFlags().VisitAll(visit)
	sort.Strings(out)
	return didYouMean(out)
}

// editDistance is the Levenshtein distance of a and b, ignoring case.
func EditDistance(a, b string) int {
	a, b = strings.ToLower(a), strings.ToLower(b)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

type rawArgsKey struct{}

// withRawArgs keeps the command line as given, for the hook to name the
// flags it ignored.
func withRawArgs(ctx context.Context, args []string) context.Context {
	return context.WithValue(ctx, rawArgsKey{}, args)
}

func RawArgs(ctx context.Context) []string {
	if ctx == nil {
		return nil
	}
	a, _ := ctx.Value(rawArgsKey{}).([]string)
	return a
}

func newVersionCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "version",
		Short: "print the version and the commit it was built from",
		Args:  NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if AsJSON(c) {
				return WriteJSON(c, map[string]string{"version": version, "commit": commit})
			}
			fmt.Fprintf(c.OutOrStdout(), "harn %s (commit %s)\n", version, commit)
			return nil
		},
	}
	AddJSONFlag(c)
	return c
}

// noArgs is cobra.NoArgs with the usage exit code: an unknown subcommand
// or a stray argument is bad input (exit 2), not an unexpected failure. A
// command with subcommands suggests the closest ones.
func NoArgs(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if c.HasSubCommands() {
		return UsageErr(fmt.Errorf("unknown command %q for %q%s; run `%s --help` for the list",
			args[0], c.CommandPath(), didYouMean(sameInitial(args[0], c.SuggestionsFor(args[0]))), c.CommandPath()))
	}
	return UsageErr(cobra.NoArgs(c, args))
}

// walkCommands calls fn on c and every command below it.
// usageArgs makes a wrong count of arguments a usage error (exit 2) that
// names the command's help, as bad flags are.
func usageArgs(c *cobra.Command) {
	check := c.Args
	if check == nil {
		return
	}
	c.Args = func(cmd *cobra.Command, args []string) error {
		err := check(cmd, args)
		if err == nil || ExitCode(err) == ExitUsage {
			return err
		}
		return UsageErr(fmt.Errorf("%s: %w; run `%s --help` for its arguments", cmd.CommandPath(), err, cmd.CommandPath()))
	}
}

func WalkCommands(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		WalkCommands(sub, fn)
	}
}
