package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// taskEntry is a roster entry of a session with a harn task.
func taskEntry(t *testing.T, id, task string, ht map[string]any) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(entry("session_id", id, "agent", "harn", "activity", "working", "task", task), &m); err != nil {
		t.Fatal(err)
	}
	if ht != nil {
		m["harn_task"] = ht
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTableShowsTheHarnTaskMarkerWithItsStateAndQueue(t *testing.T) {
	long := strings.Repeat("refactor the checkout flow ", 8)
	const tid = "t-01JH3ZQ7RN4M8K2V5X9B6C3F9Q"
	cases := []struct {
		name string
		ht   map[string]any
		task string
		want string
	}{
		{"running with a queue", map[string]any{"id": tid, "state": "running", "queue_depth": 2}, "", "▶ t-…6C3F9Q running (2 queued)"},
		{"terminal shows its status", map[string]any{"id": tid, "state": "terminal", "status": "superseded"}, "", "▶ t-…6C3F9Q superseded"},
		{"cancelling", map[string]any{"id": tid, "state": "cancelling", "status": "cancelled", "queue_depth": 1}, "", "▶ t-…6C3F9Q cancelling (1 queued)"},
		{"queued", map[string]any{"id": tid, "state": "queued"}, "", "▶ t-…6C3F9Q queued"},
		{"the text is the task's", map[string]any{"id": tid, "state": "running", "text": "hello there"}, "", "▶ t-…6C3F9Q running"},
		{"a long task is cut after the marker", map[string]any{"id": tid, "state": "quiescing", "queue_depth": 12}, long, "▶ t-…6C3F9Q quiescing (12 queued)"},
		{"hostile text is made safe", map[string]any{"id": "t-\x1b[31mX", "state": "running\nfake"}, "", "▶ t-[31mX running fake"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := table(t, false, taskEntry(t, "h-01JH3ZQ7RN4M8K2V5X9B6C3AAA", c.task, c.ht),
				entry("session_id", "8a1f0c2e-5b7d-4e21-9c3a-0d6e2f4b1a77", "name", "Bartholomew", "agent", "claude-code",
					"activity", "needs_input", "activity_updated_at", ago(180e9), "task", long,
					"project", "a-rather-long-repository-name", "node", "buildbox-eu-west"))
			if !strings.Contains(out, c.want) || strings.ContainsAny(out, "\x1b") {
				t.Errorf("want %q in\n%s", c.want, out)
			}
			for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
				if n := utf8.RuneCountInString(l); n > tableWidth {
					t.Errorf("line of %d columns: %q", n, l)
				}
			}
		})
	}
}

func TestTableWithoutHarnTaskHasNoMarker(t *testing.T) {
	out := table(t, false, taskEntry(t, "cc-1", "fix the tests", nil))
	if strings.Contains(out, "▶") || !strings.Contains(out, "fix the tests") {
		t.Errorf("a session without a harn task:\n%s", out)
	}
}

func TestTableShowsTheHarnTaskTextAfterTheMarkerWhenThereIsRoom(t *testing.T) {
	out := table(t, false, taskEntry(t, "h-1", "", map[string]any{"id": "t-01JH3ZQ7RN4M8K2V5X9B6C3F9Q", "state": "running", "text": "hello there"}))
	if !strings.Contains(out, "▶ t-…6C3F9Q running: hello there") {
		t.Errorf("want the task text after the marker:\n%s", out)
	}
}
