package agent_test

import (
	"testing"

	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/agent"
)

// alwaysRecovers is a Context whose recovery checkpoint always changes
// something, so that only the loop's own bound stops the retries.
type alwaysRecovers struct{ *agent.MemContext }

func (alwaysRecovers) Recover(string) bool { return true }

var _ agent.Context = alwaysRecovers{}

// Seed 001: "A provider context-length response creates a recovery
// checkpoint retaining the current turn and retries once." Exactly one
// retry: two requests in all, however often the provider refuses and
// however often a checkpoint could be set.
func TestContextLengthRetriesExactlyOnce(t *testing.T) {
	tooLong := reply{Status: 400, Body: `{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}`}
	srv := newScripted(t, tooLong, tooLong, tooLong, tooLong)
	p := agent.NewOpenAI(agent.ProviderConfig{BaseURL: srv.URL(), Key: "k", Retry: agent.Retry{Attempts: 1}})
	f := newFixtureWith(t, p, func(c *agent.Config) { c.Context = alwaysRecovers{agent.NewMemContext()} })
	task := f.start(t, "hi", allGrants)
	end := f.waitEvent(t, agent.EvTurnEnd)
	if end.Status != "failed" {
		t.Fatalf("end %+v", end)
	}
	if n := len(srv.requests()); n != 2 {
		t.Fatalf("%d requests for a context-length refusal; want 2 (the request and exactly one retry)", n)
	}
	if mc := f.records(t, task, runtime.RecModel); len(mc) != 2 {
		t.Fatalf("%d model calls in the ledger, want 2", len(mc))
	}
}
