package cli

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/presence/adapter/all"

	xterm "github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/presence"
)

// listFilter is the selection of `agents list`: each set flag narrows the
// rows (they compose), the same for the table, --json and --watch. A
// flag given several values (repeated or comma-separated) takes any of
// them.
type listFilter struct {
	nodes, activities, projects, agents []string
}

// activityWords are the values --activity takes: the ACTIVITY column's
// first word.
var activityWords = []string{string(presence.ActivityNeedsInput), string(presence.ActivityWorking),
	string(presence.ActivityIdle), string(presence.ActivityUnknown), "ended", "silent"}

func addListFilterFlags(c *cobra.Command) {
	c.Flags().StringSlice("node", nil, "only sessions on this node (repeat or comma-separate for any of several)")
	c.Flags().StringSlice("activity", nil, "only sessions with this activity: "+strings.Join(activityWords, ", "))
	c.Flags().StringSlice("project", nil, "only sessions of this project (the PROJECT column, with or without @branch)")
	c.Flags().StringSlice("agent", nil, "only sessions of this agent type: "+strings.Join(all.Names(), ", "))
	c.Flags().Bool("wide", false, "do not cut the table to the terminal's width")
}

// listFilterOf reads the filter flags; an unknown activity is a usage
// error.
func listFilterOf(c *cobra.Command) (listFilter, error) {
	var f listFilter
	f.nodes, _ = c.Flags().GetStringSlice("node")
	f.activities, _ = c.Flags().GetStringSlice("activity")
	f.projects, _ = c.Flags().GetStringSlice("project")
	f.agents, _ = c.Flags().GetStringSlice("agent")
	for _, a := range f.activities {
		if !slices.Contains(activityWords, a) {
			return f, hook.UsageErr(fmt.Errorf("--activity %q is not an activity; use one of %s", safe(a), strings.Join(activityWords, ", ")))
		}
	}
	return f, nil
}

func (f listFilter) empty() bool {
	return len(f.nodes) == 0 && len(f.activities) == 0 && len(f.projects) == 0 && len(f.agents) == 0
}

// activityWord is the row's activity as --activity names it: ended for
// an ended session, silent for a silent working one.
func activityWord(r *rosterRow) string {
	switch {
	case r.Ended:
		return "ended"
	case r.silent():
		return "silent"
	}
	return r.Activity
}

// match reports whether r passes the filter.
func (f listFilter) match(r *rosterRow) bool {
	any := func(set []string, ok func(string) bool) bool {
		return len(set) == 0 || slices.ContainsFunc(set, ok)
	}
	return any(f.nodes, func(n string) bool { return n == r.Node }) &&
		any(f.agents, func(a string) bool { return a == r.Agent }) &&
		any(f.activities, func(a string) bool {
			return a == activityWord(r) || (a == string(presence.ActivityWorking) && r.Activity == a && !r.Ended)
		}) &&
		any(f.projects, func(p string) bool { return p == r.ProjectName() || (p != "" && p == r.project()) })
}

// apply keeps the rows that pass, in their order.
func (f listFilter) apply(rows []*rosterRow) []*rosterRow {
	if f.empty() {
		return rows
	}
	out := rows[:0:0]
	for _, r := range rows {
		if f.match(r) {
			out = append(out, r)
		}
	}
	return out
}

// wideTable is the width of a table that is not cut (--wide).
const wideTable = 1 << 30

// tableWidthOf is the width the roster table fits: unbounded with --wide,
// else the terminal's (COLUMNS when set), else tableWidth.
func tableWidthOf(c *cobra.Command) int {
	if wide, _ := c.Flags().GetBool("wide"); wide {
		return wideTable
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	if f, ok := c.OutOrStdout().(*os.File); ok && xterm.IsTerminal(f.Fd()) {
		if w, _, err := xterm.GetSize(f.Fd()); err == nil && w > 0 {
			return w
		}
	}
	return tableWidth
}
