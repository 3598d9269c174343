package context

import (
	stdctx "context"
	"fmt"
	"testing"
	"time"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/agent"
)

// stuckCondenser is a condensation that never answers: it returns only
// when its context ends.
type stuckCondenser struct{ entered chan struct{} }

func (c stuckCondenser) Condense(ctx stdctx.Context, _ CondenseInput) (string, error) {
	select {
	case c.entered <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return "", ctx.Err()
}

// TestACancelEndsAStepThatWaitsOnACompaction: the step's working set
// reaches the admission line and its condensation hangs (the model does
// not answer it). `harn task cancel` ends the turn at once: the
// condensation's context ends with the turn's, and no model call is made
// after it. The runtime's and the loop's clock is fake and never moves,
// so neither the condensation's own timeout nor the grace period ended
// it.
func TestACancelEndsAStepThatWaitsOnACompaction(t *testing.T) {
	model, err := agent.ModelFor("scripted", 4096, 512)
	if err != nil {
		t.Fatal(err)
	}
	fake := runtime.NewFakeClock()
	cond := stuckCondenser{entered: make(chan struct{}, 1)}
	sp := NewSpace(openPebble(t, ""), Options{Compaction: true, Condenser: cond, Clock: fake})
	const session = "s1"
	lane, err := sp.Open(session, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// earlier turns' conversation (a new task keeps it, not their tool
	// traffic), well past 80% of the budget
	for i := range 30 {
		task := fmt.Sprintf("t%d", i)
		if err := lane.Append(user(task, "earlier"), agent.Message{Role: agent.RoleAssistant, Text: filler(600, i), Task: task}); err != nil {
			t.Fatal(err)
		}
	}
	r, err := runtime.New(runtime.Config{Ledger: runtime.NewMemLedger(), Key: []byte("k"), Clock: fake})
	if err != nil {
		t.Fatal(err)
	}
	box := &sizedBox{rt: r, session: session, sizes: []int{10}, outputs: map[string]string{}}
	tb := Box{Box: box, Space: sp}
	if _, err := r.SetCatalog(agent.Catalog, agent.Capabilities(tb.Specs("", ""))); err != nil {
		t.Fatal(err)
	}
	if err := r.OpenSession(session, runtime.SessionConfig{Catalog: agent.Catalog, Workdir: t.TempDir(), Budget: model.Budget(0)}); err != nil {
		t.Fatal(err)
	}
	srv := modeltest.New(t, modeltest.Text("never asked"))
	prov := agent.NewOpenAI(agent.ProviderConfig{BaseURL: srv.URL(), Key: "k"})
	ex, err := agent.New(agent.Config{Runtime: r, Session: session, Provider: prov, Box: tb, Model: model, Context: lane, Clock: fake})
	if err != nil {
		t.Fatal(err)
	}
	v, err := r.Start(session, runtime.Request{Text: "go on", Grants: []runtime.Grant{{Level: runtime.Execute, Capability: "*"}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := stdctx.WithTimeout(stdctx.Background(), time.Minute)
	defer cancel()
	run, err := r.Next(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan agent.TaskResult, 1)
	go func() { done <- ex.RunTask(ctx, run) }()
	select {
	case <-cond.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the step never reached its compaction")
	}
	if _, err := r.Cancel(v.ID, "test", "stop"); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if res.Status != runtime.StatusCancelled {
			t.Fatalf("the task ended %s", res.Status)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the turn did not end after the cancel while its compaction hung (the fake clock never moved)")
	}
	if n := len(srv.Raw()); n != 0 {
		t.Fatalf("%d model requests after the cancel", n)
	}
}
