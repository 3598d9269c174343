package tasks

import (
	"context"
	"encoding/json"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/harn-dev/harn/runtime/agent"
	"github.com/harn-dev/harn/util/text"
)

// The OpenTelemetry GenAI spans of harn's loop: one client span per
// provider request, named and attributed as the GenAI semantic
// conventions say (gen_ai.*), with harn.* for what they do not name (the
// admission decision, the compaction method). Prompt text is recorded
// only when the node is told to (LogPrompts, off by default).

// Attribute names of the GenAI spans.
const (
	attrOperation    = "gen_ai.operation.name"
	attrProvider     = "gen_ai.provider.name"
	attrSystem       = "gen_ai.system" // the older name of the provider attribute
	attrRequestModel = "gen_ai.request.model"
	attrMaxTokens    = "gen_ai.request.max_tokens"
	attrConversation = "gen_ai.conversation.id"
	attrInputTokens  = "gen_ai.usage.input_tokens"
	attrOutputTokens = "gen_ai.usage.output_tokens"
	attrInputMsgs    = "gen_ai.input.messages"
	attrErrorType    = "error.type"
	attrAdmission    = "harn.admission.decision"
	attrCompaction   = "harn.compaction.method"
	attrEstimated    = "harn.usage.estimated_input_tokens"
	attrBudget       = "harn.request.input_budget"
	attrTask         = "harn.task_id"
	attrStep         = "harn.step"
	attrAttempt      = "harn.attempt"
	attrCacheRead    = "gen_ai.usage.cache_read.input_tokens"
)

// maxPromptAttr bounds the prompt text one span records (LogPrompts).
const maxPromptAttr = 64 << 10

// GenAITracer is the loop's Tracer over t; logPrompts records the
// request's messages (gen_ai.input.messages).
func GenAITracer(t trace.Tracer, logPrompts bool) agent.Tracer {
	return genAI{t: t, prompts: logPrompts}
}

type genAI struct {
	t       trace.Tracer
	prompts bool
}

type promptMsg struct {
	Role string `json:"role"`
	Text string `json:"content,omitempty"`
}

func (g genAI) ModelCall(ctx context.Context, c agent.ModelCallStart) (context.Context, func(agent.ModelCallEnd)) {
	comp := c.Compaction
	if comp == "" {
		comp = "none"
	}
	ctx, sp := g.t.Start(ctx, "chat "+text.Clip(c.Model, 128), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String(attrOperation, "chat"),
		attribute.String(attrProvider, c.Provider),
		attribute.String(attrSystem, c.Provider),
		attribute.String(attrRequestModel, text.Clip(c.Model, 256)),
		attribute.Int(attrMaxTokens, c.MaxOutput),
		attribute.String(attrConversation, c.Session),
		attribute.String(attrTask, c.Task),
		attribute.Int(attrStep, c.Step),
		attribute.Int(attrAttempt, c.Attempt),
		attribute.String(attrAdmission, c.Admission),
		attribute.String(attrCompaction, comp),
		attribute.Int(attrEstimated, c.Estimated),
		attribute.Int(attrBudget, c.Budget),
	))
	if g.prompts && sp.IsRecording() {
		ms := make([]promptMsg, 0, len(c.Messages))
		for _, m := range c.Messages {
			ms = append(ms, promptMsg{Role: m.Role, Text: m.Text})
		}
		b, _ := json.Marshal(ms)
		sp.SetAttributes(attribute.String(attrInputMsgs, text.Clip(string(b), maxPromptAttr)))
	}
	return ctx, func(e agent.ModelCallEnd) {
		sp.SetAttributes(attribute.Int(attrInputTokens, e.Input), attribute.Int(attrOutputTokens, e.Output),
			attribute.Int(attrCacheRead, e.CacheRead))
		if e.Err != nil {
			sp.SetAttributes(attribute.String(attrErrorType, e.ErrClass))
			sp.SetStatus(codes.Error, text.Clip(text.OneLine(e.Err.Error()), 256))
		}
		sp.End()
	}
}
