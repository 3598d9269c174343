package node

import (
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
	"github.com/harn-dev/harn/node/tasks"
)

// genAISpan runs one harn turn against the scripted model on a node with
// in-memory tracing and returns the provider request's span attributes.
func genAISpan(t *testing.T, logPrompts bool) (map[string]string, trace.SpanKind) {
	t.Helper()
	tp, exp := memTracing()
	cfg := testConfig(t, t.TempDir())
	cfg.TracerProvider, cfg.LogPrompts = tp, logPrompts
	n := openNode(t, cfg)
	m := modeltest.New(t, modeltest.Text("the answer"))
	if _, err := n.Tasks().Do(tasks.Action{Op: tasks.OpStart, Agent: tasks.AgentHarn, Text: "a secret prompt", Workdir: t.TempDir(),
		Harn: &tasks.HarnOptions{URL: m.URL(), Model: "test-model", Key: "k"}}); err != nil {
		t.Fatal(err)
	}
	spans := spansOnceEnded(t, exp, "chat test-model")
	sp := spanNamed(t, spans, "chat test-model")
	attrs := map[string]string{}
	for _, kv := range sp.Attributes {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	return attrs, sp.SpanKind
}

// TestProviderRequestsCarryGenAISpans: with tracing on, each provider
// request of harn's loop is a client span with the GenAI attributes (the
// model, input and output tokens as the provider counted them) and
// harn's admission decision and compaction method, and no prompt text.
func TestProviderRequestsCarryGenAISpans(t *testing.T) {
	attrs, kind := genAISpan(t, false)
	if kind != trace.SpanKindClient {
		t.Errorf("the span is %v, not a client span", kind)
	}
	want := map[string]string{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "test-model",
		"gen_ai.usage.input_tokens": "20", "gen_ai.usage.output_tokens": "5",
		"harn.admission.decision": "admitted", "harn.compaction.method": "none",
	}
	for k, v := range want {
		if attrs[k] != v {
			t.Errorf("%s = %q, want %q (all: %v)", k, attrs[k], v, attrs)
		}
	}
	for k, v := range attrs {
		if strings.Contains(v, "a secret prompt") {
			t.Errorf("attribute %s carries the prompt text by default: %q", k, v)
		}
	}
}

// TestGenAISpansRecordPromptsOnlyWhenTold: --otel-log-prompts adds the
// request's messages.
func TestGenAISpansRecordPromptsOnlyWhenTold(t *testing.T) {
	attrs, _ := genAISpan(t, true)
	if !strings.Contains(attrs["gen_ai.input.messages"], "a secret prompt") {
		t.Fatalf("gen_ai.input.messages = %q", attrs["gen_ai.input.messages"])
	}
}
