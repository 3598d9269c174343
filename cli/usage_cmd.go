package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/tasks/taskapi"
	"github.com/harn-dev/harn/node/tasks/taskwire"
	"github.com/harn-dev/harn/util/text"
)

// ErrBadUsage means harn usage's flags are wrong.
var ErrBadUsage = errors.New("usage")

// price is a model's price in USD per million tokens.
// CacheRead and CacheWrite, when set, price the input tokens read from
// and written to the provider's prompt cache (their part of the input);
// unset, those tokens are priced as input.
type price struct {
	Input      float64  `json:"input"`
	Output     float64  `json:"output"`
	CacheRead  *float64 `json:"cache_read,omitempty"`
	CacheWrite *float64 `json:"cache_write,omitempty"`
}

// cost is the USD cost of a row's tokens at p. Input counts every input
// token, the cache's included.
func (p price) cost(u taskwire.UsageRow) float64 {
	in := float64(u.Input) * p.Input
	if p.CacheRead != nil {
		in += float64(u.CacheRead) * (*p.CacheRead - p.Input)
	}
	if p.CacheWrite != nil {
		in += float64(u.CacheWrite) * (*p.CacheWrite - p.Input)
	}
	return (in + float64(u.Output)*p.Output) / 1e6
}

// usageRow is one printed row.
type usageRow struct {
	taskwire.UsageRow
	Node string   `json:"node"`
	Cost *float64 `json:"cost_usd,omitempty"`
}

func newUsageCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "usage",
		Short: "sum the model-call tokens the task ledgers recorded, mesh-wide",
		Args:  hook.NoArgs,
		RunE:  runUsage,
	}
	c.Flags().String("by", "session", "group by session, agent or node")
	c.Flags().Duration("since", 0, "only calls of this last duration (e.g. 24h; default all)")
	c.Flags().String("prices", "", "a JSON `file` of prices per model, USD per million tokens: {\"MODEL\": {\"input\": N, \"output\": N, \"cache_read\": N, \"cache_write\": N}} (the cache prices are optional)")
	hook.AddJSONFlag(c)
	return c
}

func runUsage(c *cobra.Command, _ []string) error {
	by, _ := c.Flags().GetString("by")
	if by != "session" && by != "agent" && by != "node" {
		return hook.UsageErr(fmt.Errorf("%w: --by %q; use session, agent or node", ErrBadUsage, by))
	}
	since, _ := c.Flags().GetDuration("since")
	if since < 0 {
		return hook.UsageErr(fmt.Errorf("%w: --since must be a positive duration", ErrBadUsage))
	}
	prices := map[string]price{}
	if f, _ := c.Flags().GetString("prices"); f != "" {
		b, err := os.ReadFile(f)
		if err == nil {
			err = json.Unmarshal(b, &prices)
		}
		if err != nil {
			return hook.UsageErr(fmt.Errorf("%w: --prices %s: %w", ErrBadUsage, f, err))
		}
	}
	a := taskwire.Action{Op: taskwire.OpUsage, Text: by}
	if since > 0 {
		a.Since = int(hook.Clk.Now().Add(-since).Unix())
	}
	var rows []usageRow
	err := withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
		res, err := cl.api.Task(ctx, &api.TaskRequest{Action: taskapi.ActionToAPI(a)})
		if err != nil {
			return taskErr(err, p)
		}
		r, err := taskapi.ResultFromAPI(res.Result)
		if err != nil {
			return err
		}
		for _, r := range []taskwire.Result{r} {
			for _, u := range r.Usage {
				row := usageRow{UsageRow: u, Node: u.Node}
				if row.Node == "" {
					row.Node = r.Node
				}
				if pr, ok := prices[u.Model]; ok {
					cost := pr.cost(u)
					row.Cost = &cost
				}
				rows = append(rows, row)
			}
			if r.Message != "" {
				fmt.Fprintln(c.ErrOrStderr(), "harn usage: "+text.Sanitize(r.Message))
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Input+rows[i].Output > rows[j].Input+rows[j].Output })
	if hook.AsJSON(c) {
		if rows == nil {
			rows = []usageRow{}
		}
		return hook.WriteJSON(c, rows)
	}
	w := c.OutOrStdout()
	fmt.Fprintf(w, "%-28s %-24s %-10s %6s %10s %10s %10s %10s\n", "KEY", "MODEL", "NODE", "CALLS", "EST_IN", "INPUT", "OUTPUT", "COST_USD")
	for _, r := range rows {
		cost := "-"
		if r.Cost != nil {
			cost = fmt.Sprintf("%.4f", *r.Cost)
		}
		fmt.Fprintf(w, "%-28s %-24s %-10s %6d %10d %10d %10d %10s\n", text.Sanitize(text.Clip(r.Key, 28)), text.Sanitize(text.Clip(r.Model, 24)),
			text.Sanitize(text.Clip(r.Node, 10)), r.Calls, r.Estimated, r.Input, r.Output, cost)
	}
	return nil
}
