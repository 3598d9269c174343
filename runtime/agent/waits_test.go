package agent_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/agent"
	"github.com/harn-dev/harn/runtime/agent/tools"
)

// waitBox has one tool marked Waits: each call returns only once all n
// calls of the step are in flight, which the loop's Parallel bound (4)
// would forbid for n = 6 if the calls held slots.
type waitBox struct {
	mu       sync.Mutex
	inflight int
	n        int
	all      chan struct{}
}

func (b *waitBox) Specs(_, _ string) []tools.Spec {
	return []tools.Spec{{Name: "wait", Schema: obj, Provider: "harn", Hash: "h-wait", Waits: true}}
}
func (b *waitBox) Prompt(_, _, _ string) []string    { return nil }
func (b *waitBox) Instructions(_, _ string) []string { return nil }
func (b *waitBox) EndStep(_, _ string)               {}
func (b *waitBox) Run(ctx context.Context, c tools.Call) (tools.Result, error) {
	b.mu.Lock()
	b.inflight++
	if b.inflight == b.n {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
	case <-ctx.Done():
		return tools.Result{Content: "cancelled", IsError: true}, ctx.Err()
	}
	return tools.Result{Content: "ok " + c.ID}, nil
}

func TestWaitingCallsRunOutsideTheParallelBound(t *testing.T) {
	const n = 6
	box := &waitBox{n: n, all: make(chan struct{})}
	rt, err := runtime.New(runtime.Config{Ledger: runtime.NewMemLedger(), Key: []byte("k"), Clock: runtime.NewFakeClock(), Grace: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.SetCatalog(agent.Catalog, agent.Capabilities(box.Specs("", ""))); err != nil {
		t.Fatal(err)
	}
	m, _ := agent.ModelFor("gpt-4o", 0, 0)
	if err := rt.OpenSession(sess, runtime.SessionConfig{Catalog: agent.Catalog, Workdir: t.TempDir(), Budget: m.Budget(0)}); err != nil {
		t.Fatal(err)
	}
	var calls [][3]string
	for i := range n {
		calls = append(calls, [3]string{fmt.Sprintf("w%d", i), "wait", `{}`})
	}
	srv := newScripted(t, toolsReply(true, calls...), textReply("all waited"))
	p := agent.NewOpenAI(agent.ProviderConfig{BaseURL: srv.URL(), Key: "k"})
	ex, err := agent.New(agent.Config{Runtime: rt, Session: sess, Provider: p, Box: box, Model: m, Parallel: 4})
	if err != nil {
		t.Fatal(err)
	}
	v, err := rt.Start(sess, runtime.Request{Text: "wait for all", Grants: allGrants})
	if err != nil {
		t.Fatal(err)
	}
	run, err := rt.Next(context.Background(), sess)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan agent.TaskResult, 1)
	go func() { done <- ex.RunTask(context.Background(), run) }()
	select {
	case res := <-done:
		if res.Status != runtime.StatusSucceeded || res.Final != "all waited" {
			t.Fatalf("%+v", res)
		}
	case <-time.After(30 * time.Second):
		_, _ = rt.Cancel(v.ID, "test", "the waiting calls held slots")
		t.Fatal("six waiting calls did not run at once under Parallel 4")
	}
}
