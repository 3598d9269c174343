package runtime

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestConcurrentDriversAreRaceFree runs an executor loop, a hook checking
// calls, and an operator superseding, cancelling and confirming, all at
// once; run it under -race. It ends when the operator is done.
func TestConcurrentDriversAreRaceFree(t *testing.T) {
	f := newFixture(t)
	_, _ = f.rt.Start(testSession, Request{Text: "first"})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { // executor
		defer wg.Done()
		for ctx.Err() == nil {
			run, err := f.rt.Next(ctx, testSession)
			if err != nil {
				return
			}
			for i := 0; i < 5 && run.Context().Err() == nil; i++ {
				c, err := run.Begin(f.req("write_file", `{"file_path":"x"}`))
				if err != nil {
					continue
				}
				_ = c.Wait(ctx)
				_ = c.End(OutcomeSucceeded, []byte("ok"))
				_, _ = run.EndStep()
			}
			_ = run.Finish(StatusSucceeded, "done")
		}
	}()
	go func() { // hook
		defer wg.Done()
		for ctx.Err() == nil {
			if id, ok := f.rt.ActiveTask(testSession); ok {
				_, _ = f.rt.Check(id, f.req("read_file", `{}`))
				_, _ = f.rt.Grants(id)
			}
			_, _ = f.rt.Session(testSession)
		}
	}()
	go func() { // operator
		defer wg.Done()
		defer cancel()
		for i := range 200 {
			switch i % 4 {
			case 0:
				_, _ = f.rt.Supersede(testSession, Request{Text: "s", Grants: []Grant{{Level: Execute, Capability: "*", Confirm: i%8 == 0}}})
			case 1:
				_, _ = f.rt.FollowUp(testSession, Request{Text: "f", RequiresSuccess: true})
			case 2:
				if id, ok := f.rt.ActiveTask(testSession); ok {
					v, _ := f.rt.Task(id)
					for _, c := range v.PendingCalls {
						_ = f.rt.Confirm(id, c, "op")
					}
					_ = f.rt.Ack(id, "op")
				}
			case 3:
				if v, err := f.rt.Session(testSession); err == nil && v.Task != nil && v.Task.State == StateBlocked {
					_, _ = f.rt.Resume(v.Task.ID)
				}
				f.clk.Advance(testGrace)
			}
		}
	}()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the drivers did not stop")
	}
	checkLedgerT(t, f.led.All())
}

// checkLedgerT runs the ledger invariants of the property tests.
func checkLedgerT(t *testing.T, recs []Record) {
	t.Helper()
	ran, ended := map[string]bool{}, map[string]bool{}
	for i, r := range recs {
		switch {
		case r.Kind == RecState && r.State == StateRunning:
			for id := range ran {
				if !ended[id] {
					t.Fatalf("record %d: %s started while %s had not passed the barrier", i, r.Task, id)
				}
			}
			ran[r.Task] = true
		case r.Kind == RecState && r.State == StateTerminal:
			ended[r.Task] = true
		}
	}
}
