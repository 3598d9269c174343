package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/util/text"
)

func newContextCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "context SESSION",
		Short: "show a harn session's context: items with their states, checkpoints, the budget line",
		Long: `context shows what harn's own agent loop keeps of a session on this node: every
history item with its state (pinned, active, retained, archived), its tokens
and output reference, the checkpoints (method, covered range, sizes before and
after) and the working set against the usable input budget. --provider-view
prints the exact messages the next model request carries instead.`,
		Args: cobra.ExactArgs(1),
		RunE: runContext,
	}
	c.Flags().Bool("provider-view", false, "print the exact messages of the next model request")
	hook.AddJSONFlag(c)
	return c
}

// contextReport is the part of the room's report the table prints.
type contextReport struct {
	Session string `json:"session"`
	Lane    string `json:"lane"`
	Budget  struct {
		Usable    int `json:"usable_tokens"`
		Used      int `json:"used_tokens"`
		Admission int `json:"admission_tokens"`
		Target    int `json:"target_tokens"`
	} `json:"budget"`
	Items []struct {
		Seq    uint64 `json:"seq"`
		Kind   string `json:"kind"`
		Role   string `json:"role"`
		State  string `json:"state"`
		Tokens int    `json:"tokens"`
		Ref    string `json:"ref"`
		Bytes  int    `json:"bytes"`
		Text   string `json:"text"`
	} `json:"items"`
	Checkpoints []struct {
		Seq      uint64 `json:"seq"`
		Method   string `json:"method"`
		From     uint64 `json:"from"`
		To       uint64 `json:"to"`
		Retained int    `json:"retained"`
		Before   int    `json:"before_tokens"`
		After    int    `json:"after_tokens"`
		Note     string `json:"note"`
	} `json:"checkpoints"`
}

type providerMessage struct {
	Role  string `json:"role"`
	Text  string `json:"text"`
	Calls []struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"calls"`
	CallID  string `json:"call_id"`
	IsError bool   `json:"is_error"`
}

func runContext(c *cobra.Command, args []string) error {
	pv, _ := c.Flags().GetBool("provider-view")
	var res *api.ContextResponse
	err := withNode(c, func(ctx context.Context, cl *client, p hook.Place) error {
		var err error
		res, err = cl.api.Context(ctx, &api.ContextRequest{Session: args[0], ProviderView: pv})
		if err != nil {
			return taskErr(err, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	w := c.OutOrStdout()
	if hook.AsJSON(c) {
		b := res.ReportJson
		if pv {
			b = res.ProviderJson
		}
		var out bytes.Buffer
		if err := json.Indent(&out, b, "", "  "); err != nil {
			return fmt.Errorf("context: the node's answer is not JSON: %w", err)
		}
		out.WriteByte('\n')
		_, err := w.Write(out.Bytes())
		return err
	}
	if pv {
		var ms []providerMessage
		if err := json.Unmarshal(res.ProviderJson, &ms); err != nil {
			return fmt.Errorf("context: the node's answer is not JSON: %w", err)
		}
		for i, m := range ms {
			fmt.Fprintf(w, "--- %d %s", i, m.Role)
			if m.CallID != "" {
				fmt.Fprintf(w, " (answers %s)", text.Sanitize(text.Clip(m.CallID, 128)))
			}
			fmt.Fprintln(w)
			if m.Text != "" {
				fmt.Fprintln(w, text.Sanitize(m.Text))
			}
			for _, cl := range m.Calls {
				fmt.Fprintf(w, "call %s %s %s\n", text.Sanitize(text.Clip(cl.ID, 128)), text.Sanitize(text.Clip(cl.Name, 128)), text.Sanitize(text.Clip(string(cl.Args), 512)))
			}
		}
		return nil
	}
	var r contextReport
	if err := json.Unmarshal(res.ReportJson, &r); err != nil {
		return fmt.Errorf("context: the node's answer is not JSON: %w", err)
	}
	fmt.Fprintf(w, "session %s  lane %s\n", text.Sanitize(r.Session), text.Sanitize(r.Lane))
	fmt.Fprintf(w, "budget: %d of %d tokens used (compaction at %d, down to %d)\n", r.Budget.Used, r.Budget.Usable, r.Budget.Admission, r.Budget.Target)
	fmt.Fprintf(w, "%-6s %-12s %-9s %-9s %7s %-10s %s\n", "SEQ", "KIND", "ROLE", "STATE", "TOKENS", "REF", "TEXT")
	for _, it := range r.Items {
		fmt.Fprintf(w, "%-6x %-12s %-9s %-9s %7d %-10s %s\n", it.Seq, text.Sanitize(it.Kind), text.Sanitize(it.Role), text.Sanitize(it.State),
			it.Tokens, text.Sanitize(it.Ref), text.Sanitize(text.Clip(it.Text, 80)))
	}
	if len(r.Checkpoints) > 0 {
		fmt.Fprintf(w, "\n%-6s %-9s %-13s %8s %8s %8s %s\n", "CKPT", "METHOD", "COVERS", "RETAINED", "BEFORE", "AFTER", "NOTE")
		for _, cp := range r.Checkpoints {
			fmt.Fprintf(w, "%-6x %-9s %-13s %8d %8d %8d %s\n", cp.Seq, text.Sanitize(cp.Method), fmt.Sprintf("%x-%x", cp.From, cp.To),
				cp.Retained, cp.Before, cp.After, text.Sanitize(text.Clip(cp.Note, 120)))
		}
	}
	return nil
}
