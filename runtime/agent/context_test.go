package agent_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/harn-dev/harn/runtime/agent"
)

// TestMemContextSendsOnlyTheConversationOfEarlierTasks (seed 000): of
// an earlier task the working set carries the prompts and the final
// answer, never its tool calls and results; the current task's exchange
// is whole.
func TestMemContextSendsOnlyTheConversationOfEarlierTasks(t *testing.T) {
	c := agent.NewMemContext()
	calls := []agent.ToolCall{{ID: "c1", Name: "read", Args: json.RawMessage(`{}`)}}
	_ = c.Append(
		agent.Message{Role: agent.RoleUser, Text: "one", Task: "t1"},
		agent.Message{Role: agent.RoleAssistant, Calls: calls, Task: "t1"},
		agent.Message{Role: agent.RoleTool, CallID: "c1", Text: "out", Task: "t1"},
		agent.Message{Role: agent.RoleAssistant, Text: "final", Task: "t1"},
		agent.Message{Role: agent.RoleUser, Text: "two", Task: "t2"},
		agent.Message{Role: agent.RoleAssistant, Calls: calls, Task: "t2"},
		agent.Message{Role: agent.RoleTool, CallID: "c1", Text: "out2", Task: "t2"},
	)
	ws, err := c.WorkingSet(context.Background(), "t2", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ws {
		got = append(got, m.Role+":"+m.Text)
	}
	want := []string{"user:one", "assistant:final", "user:two", "assistant:", "tool:out2"}
	if len(got) != len(want) {
		t.Fatalf("working set %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("working set %q, want %q", got, want)
		}
	}
}
