package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/roster"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/node/tasks/taskwire"
)

// TestARequestIdNamesItsNodeAndOnlyThatNodeIsAsked: in a mesh of three,
// a permission request opened on tw2 carries tw2 in its id, and answers
// given on tw0 reach tw2 alone: tw1's cluster service never sees an
// Answer (its server spans say so), where the old fan-out asked every
// member in turn.
func TestARequestIdNamesItsNodeAndOnlyThatNodeIsAsked(t *testing.T) {
	exps := map[string]*tracetest.InMemoryExporter{}
	m, _ := startTrustMeshWith(t, func(c *Config) {
		tp, exp := memTracing()
		c.TracerProvider, exps[c.Name] = tp, exp
		c.Cluster.RemoteControl = "tw0"
	})
	n0 := m.nodes[0]
	m.join("tw1", m.token(false, 0, 0), false)
	n2 := m.join("tw2", m.token(false, 0, 0), false)
	mesh.WaitFor(t, 15*time.Second, "tw0 sees tw1 and tw2 alive", func() bool {
		r := n0.roster.Reachability()
		a, b := r["tw1"], r["tw2"]
		return roster.Reachable(a, a.Name != "") && roster.Reachable(b, b.Name != "")
	})
	const asks = 6 // the old fan-out, in map order, missed tw1 with odds 1/64
	var ids []string
	var answered []<-chan bool
	for i := range asks {
		id, got := awaitOpen(t, n2, tasks.Request{Session: fmt.Sprintf("s%d", i), Key: fmt.Sprintf("k%d", i), Agent: "claude-code", Tool: "Bash"})
		if node, ok := taskwire.RequestNode(id); !ok || node != "tw2" {
			t.Fatalf("request id %q names node %q (%v), want tw2", id, node, ok)
		}
		ids, answered = append(ids, id), append(answered, got)
	}
	svc := n0.taskSvc.Local()
	for i, id := range ids {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := svc.Answer(ctx, &api.AnswerRequest{Request: id, Allow: true, By: "op"})
		cancel()
		if err != nil || res.GetRequest().GetId() != id {
			t.Fatalf("answer %s on tw0: %v %v", id, res, err)
		}
		select {
		case ok := <-answered[i]:
			if !ok {
				t.Fatalf("the hook of %s got no allow", id)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the hook of %s got no answer", id)
		}
	}
	serverAnswers := func(node string) int {
		n := 0
		for _, s := range exps[node].GetSpans() {
			if s.Name == "harn.v1.Cluster/Answer" && s.SpanKind == trace.SpanKindServer {
				n++
			}
		}
		return n
	}
	// A server span ends just after its reply is sent.
	waitFor(t, 10*time.Second, "tw2's server spans of every answer", func() bool { return serverAnswers("tw2") >= asks })
	if got := serverAnswers("tw2"); got != asks {
		t.Errorf("tw2 served %d answers, want %d", got, asks)
	}
	if got := serverAnswers("tw1"); got != 0 {
		t.Errorf("tw1 was asked %d times for requests tw2 holds; want never", got)
	}
}

// TestRequestNodeParsesIds: the node of a request id, and the ids that
// name none.
func TestRequestNodeParsesIds(t *testing.T) {
	for id, want := range map[string]string{
		taskwire.RequestID("01J0", "n-1.x"): "n-1.x",
		"r-01J0":                            "",
		"r-01J0@":                           "",
		"toolu_1@n1":                        "",
		taskwire.RequestID("01J0", ""):      "",
	} {
		got, ok := taskwire.RequestNode(id)
		if got != want || ok != (want != "") {
			t.Errorf("RequestNode(%q) = %q %v, want %q", id, got, ok, want)
		}
	}
}
