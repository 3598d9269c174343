package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/util/text"
)

func newNotifyCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "notify",
		Short: "the mesh's notifications: webhooks told of needs_input, blocked, done, unreachable, silent",
		Args:  hook.NoArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	c.AddCommand(newNotifyAddCmd(), newNotifyListCmd(), newNotifyRemoveCmd())
	return c
}

func newNotifyAddCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "add webhook URL",
		Short: "post one message per transition to a webhook (configured once for the whole mesh)",
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 2 || args[0] != "webhook" {
				return hook.UsageErr(fmt.Errorf("%s takes `webhook URL`; got %d arguments", c.CommandPath(), len(args)))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			on, _ := c.Flags().GetString("on")
			format, _ := c.Flags().GetString("format")
			return notifyCall(c, &api.NotifyRequest{Op: "add", Url: args[1], On: on, Format: format},
				func(res *api.NotifyResponse) string {
					if !res.Changed {
						return fmt.Sprintf("webhook %s is already configured", text.Sanitize(res.Id))
					}
					return fmt.Sprintf("added webhook %s for the mesh", text.Sanitize(res.Id))
				})
		},
	}
	c.Flags().String("on", "", "transitions to post, comma-separated: needs_input, blocked, done, unreachable, silent (default: all)")
	c.Flags().String("format", "json", "message shape: json, slack, discord or ntfy")
	hook.AddJSONFlag(c)
	return c
}

func newNotifyRemoveCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "remove ID",
		Short: "remove a webhook from the mesh",
		Args:  exactArgs(1, "a webhook id from `harn notify list`"),
		RunE: func(c *cobra.Command, args []string) error {
			return notifyCall(c, &api.NotifyRequest{Op: "remove", Id: args[0]},
				func(res *api.NotifyResponse) string {
					return fmt.Sprintf("removed webhook %s from the mesh", text.Sanitize(res.Id))
				})
		},
	}
	hook.AddJSONFlag(c)
	return c
}

func newNotifyListCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "list",
		Short: "list the mesh's webhooks with this node's delivery counts",
		Args:  hook.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return notifyCall(c, &api.NotifyRequest{Op: "list"}, nil)
		},
	}
	hook.AddJSONFlag(c)
	return c
}

// notifyListJSON is `harn notify list --json` (and add/remove --json).
type notifyListJSON struct {
	// Node is the node whose counts these are: each node counts what it
	// sent itself.
	Node     string             `json:"node"`
	ID       string             `json:"id,omitempty"`
	Changed  bool               `json:"changed,omitempty"`
	Webhooks []wire.WebhookView `json:"webhooks"`
	Desktop  wire.DesktopView   `json:"desktop"`
}

// notifyCall makes one Notify call and prints its answer: done's line
// (for add and remove) and the list.
func notifyCall(c *cobra.Command, req *api.NotifyRequest, done func(*api.NotifyResponse) string) error {
	return withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
		res, err := cl.api.Notify(ctx, req)
		if err != nil {
			return hook.RpcErr(err, p)
		}
		out := notifyListJSON{Node: res.Node, Webhooks: []wire.WebhookView{}}
		if done != nil {
			out.ID, out.Changed = res.Id, res.Changed
		}
		for _, w := range res.Webhooks {
			out.Webhooks = append(out.Webhooks, wire.WebhookFromAPI(w))
		}
		out.Desktop = wire.DesktopFromAPI(res.Desktop)
		if hook.AsJSON(c) {
			return hook.WriteJSON(c, out)
		}
		w := c.OutOrStdout()
		if done != nil {
			fmt.Fprintln(w, done(res))
			return nil
		}
		return renderNotifyList(c, out)
	})
}

func renderNotifyList(c *cobra.Command, out notifyListJSON) error {
	w := c.OutOrStdout()
	desk := "off"
	if out.Desktop.Asked {
		desk = "off (asked for, but neither notify-send nor osascript is installed on that machine)"
	}
	if out.Desktop.Enabled {
		desk = fmt.Sprintf("on (shown %d, failed %d, dropped %d)", out.Desktop.Shown, out.Desktop.Failed, out.Desktop.Dropped)
	}
	if len(out.Webhooks) == 0 {
		fmt.Fprintln(w, "no webhooks; add one with `harn notify add webhook URL`")
		fmt.Fprintf(w, "desktop notifications on node %s: %s\n", text.Sanitize(out.Node), desk)
		return nil
	}
	fmt.Fprintf(w, "webhooks of the mesh; counts are node %s's own (each node sends for its own sessions)\n", text.Sanitize(out.Node))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tURL\tFORMAT\tON\tQUEUED\tSENT\tFAILED\tDROPPED\tLAST ERROR")
	for _, v := range out.Webhooks {
		on := "all"
		if len(v.On) > 0 {
			on = strings.Join(v.On, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", text.Cell(v.ID), text.Cell(v.URL), text.Cell(v.Format),
			text.Cell(on), v.Queued, v.Sent, v.Failed, v.Dropped, text.Cell(orDash(text.Clip(v.LastError, 60))))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "desktop notifications on node %s: %s\n", text.Sanitize(out.Node), desk)
	return nil
}
