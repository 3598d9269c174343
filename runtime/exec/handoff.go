package exec

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/harn-dev/harn/runtime"
)

// MaxHandoffBytes bounds the handoff block written before a successor's
// prompt; older conversation messages are left out first.
const MaxHandoffBytes = 64 << 10

// FormatHandoff writes a successor's handoff as a block to put before its
// prompt: the conversation up to its submission point (newest kept when it
// does not fit in max bytes, with a count of what was left out), the
// predecessor's final message, and the redacted digest. An empty handoff
// gives "".
func FormatHandoff(h runtime.Handoff, max int) string {
	if len(h.Conversation) == 0 && h.PredecessorFinal == "" && h.Digest == nil {
		return ""
	}
	var tail strings.Builder
	if h.PredecessorFinal != "" {
		tail.WriteString("Final message of the previous task (a JSON string):\n")
		tail.WriteString(oneLineJSON(clipID(h.PredecessorFinal, max/2)))
		tail.WriteString("\n")
	}
	if d := h.Digest; d != nil {
		c := d.Calls
		fmt.Fprintf(&tail, "Previous task %s ended %s; calls: %d started, %d succeeded, %d failed, %d aborted, %d outcome_unknown, %d refused, %d denied.\n",
			d.Predecessor, d.Status, c.Started, c.Succeeded, c.Failed, c.Aborted, c.Unknown, c.Refused, c.Denied)
		if len(d.Capabilities) > 0 {
			parts := make([]string, 0, len(d.Capabilities))
			for _, cc := range d.Capabilities {
				parts = append(parts, fmt.Sprintf("%s %d", cc.Name, cc.Calls))
			}
			tail.WriteString("Calls per capability: " + strings.Join(parts, ", ") + ".\n")
		}
	}
	const open, end = "<harn-handoff>\n", "</harn-handoff>\n\n"
	budget := max - len(open) - len(end) - tail.Len()
	// Newest messages first, until the budget is spent.
	var lines []string
	used, kept := 0, 0
	for i := len(h.Conversation) - 1; i >= 0; i-- {
		m := h.Conversation[i]
		l := m.Role + ": " + oneLineJSON(m.Text) + "\n"
		if used+len(l) > budget-64 {
			break
		}
		lines = append(lines, l)
		used += len(l)
		kept++
	}
	var b strings.Builder
	b.WriteString(open)
	if len(h.Conversation) > 0 {
		b.WriteString("Conversation so far (each message as a JSON string):\n")
		if left := len(h.Conversation) - kept; left > 0 {
			fmt.Fprintf(&b, "(%d earlier messages left out)\n", left)
		}
		for i := len(lines) - 1; i >= 0; i-- {
			b.WriteString(lines[i])
		}
	}
	b.WriteString(tail.String())
	b.WriteString(end)
	return b.String()
}

// oneLineJSON quotes s as a JSON string, so a message cannot break the
// block's lines or close it.
func oneLineJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
