package node

import (
	"context"
	"testing"

	"github.com/harn-dev/harn/node/roster"
	"github.com/harn-dev/harn/node/tasks"
)

// `agents show` of a session hosted on another node carries its harn task
// as the owner gossips it, as it does for a local one.
func TestShowOfARemoteSessionIncludesItsHarnTask(t *testing.T) {
	c := startTestCluster(t, 2, "local")
	a, b := c.nodes[0], c.nodes[1]
	res, err := a.Tasks().Do(tasks.Action{Op: tasks.OpStart, Command: "cat", Workdir: t.TempDir(), Text: "hello there"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Session == "" || res.Task == nil {
		t.Fatalf("start: %+v", res)
	}
	var got roster.Entry
	waitFor(t, clusterWait, "node B shows the harn task of A's session", func() bool {
		e, note, err := b.roster.ReadSession(context.Background(), res.Session)
		got = e
		return err == nil && note == "" && e.Source == "owner" && e.HarnTask != nil && e.HarnTask.Id == res.Task.ID &&
			e.HarnTask.State == "terminal" && e.HarnTask.Status == "succeeded"
	})
	if got.HarnTask.Text != "hello there" {
		t.Errorf("harn_task text %q, want the task's text", got.HarnTask.Text)
	}
}
