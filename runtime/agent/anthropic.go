package agent

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/harn-dev/harn/util/text"
)

// Anthropic speaks Anthropic's Messages API with streaming and tool use;
// the stable prefix (system prompt, skills' instructions and the tools) is
// marked for prompt caching.
type Anthropic struct {
	client anthropic.Client
	retry  Retry
	bounds Bounds
}

// NewAnthropic builds the Anthropic provider. It does no I/O. The SDK
// reads nothing from the node's environment (ANTHROPIC_API_KEY,
// ANTHROPIC_AUTH_TOKEN, ANTHROPIC_BASE_URL, ANTHROPIC_CUSTOM_HEADERS): the
// key and URL are the session's, so no credential of the node's goes to
// a URL a caller named.
func NewAnthropic(cfg ProviderConfig) *Anthropic {
	opts := []option.RequestOption{option.WithoutEnvironmentDefaults(), option.WithMaxRetries(0), option.WithAPIKey(cfg.Key),
		option.WithMiddleware(boundStreams(cfg.Bounds))}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(strings.TrimRight(cfg.BaseURL, "/")+"/"))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &Anthropic{client: anthropic.NewClient(opts...), retry: cfg.Retry.norm(), bounds: cfg.Bounds.Norm()}
}

// Name is "anthropic".
func (p *Anthropic) Name() string { return "anthropic" }

// Complete runs one streamed Messages call, retrying 429 and 5xx.
func (p *Anthropic) Complete(ctx context.Context, req Request, onText func(string)) (Response, error) {
	params := anthropicParams(req)
	var resp Response
	retries, err := p.retry.do(ctx, func() error {
		var err error
		resp, err = p.stream(ctx, params, onText)
		return err
	})
	resp.Retries = retries
	return resp, err
}

func (p *Anthropic) stream(ctx context.Context, params anthropic.MessageNewParams, onText func(string)) (Response, error) {
	s := p.client.Messages.NewStreaming(ctx, params)
	defer s.Close() // over a bound: stops the read and drops the connection
	var msg anthropic.Message
	m := newMeter(p.bounds)
	calls := 0
	for s.Next() {
		ev := s.Current()
		switch ev.Type {
		case "content_block_delta":
			d := ev.Delta
			if err := m.add(len(d.Text) + len(d.PartialJSON) + len(d.Thinking) + len(d.Signature) + len(d.JSON.Citation.Raw())); err != nil {
				return Response{}, err
			}
		case "message_start":
			if err := m.add(rawLen(ev.Message.JSON.Content.Raw())); err != nil {
				return Response{}, err
			}
		case "content_block_start":
			cb := ev.ContentBlock
			n := len(cb.ID) + len(cb.Name) + len(cb.Text) + len(cb.Thinking) + len(cb.Signature) + len(cb.Data) +
				rawLen(cb.JSON.Input.Raw()) + rawLen(cb.JSON.Content.Raw())
			if err := m.add(n); err != nil {
				return Response{}, err
			}
			if cb.Type == "tool_use" || cb.Type == "server_tool_use" {
				calls++
				if err := m.calls(calls); err != nil {
					return Response{}, err
				}
			}
		}
		if err := msg.Accumulate(ev); err != nil {
			return Response{}, err
		}
		if ev.Type == "content_block_delta" && ev.Delta.Type == "text_delta" && onText != nil {
			onText(ev.Delta.Text)
		}
	}
	if err := s.Err(); err != nil {
		return Response{}, anthropicError(err)
	}
	r := Response{Stop: string(msg.StopReason), Usage: Usage{Input: int(msg.Usage.InputTokens + msg.Usage.CacheReadInputTokens + msg.Usage.CacheCreationInputTokens),
		Output: int(msg.Usage.OutputTokens), CacheRead: int(msg.Usage.CacheReadInputTokens), CacheWrite: int(msg.Usage.CacheCreationInputTokens)}}
	var b strings.Builder
	for _, c := range msg.Content {
		switch c.Type {
		case "text":
			b.WriteString(c.Text)
		case "tool_use":
			args := c.Input
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
			r.Calls = append(r.Calls, ToolCall{ID: c.ID, Name: c.Name, Args: args})
		}
	}
	r.Text = b.String()
	return r, nil
}

// rawLen is the length of a raw JSON value, 0 for an empty one ({}, [],
// null or absent).
func rawLen(raw string) int {
	if len(raw) <= 4 {
		return 0
	}
	return len(raw)
}

func anthropicError(err error) error {
	var ae *anthropic.Error
	if !errors.As(err, &ae) {
		return err
	}
	msg := ae.Message
	if msg == "" {
		msg = ae.Error()
	}
	se := &StatusError{Provider: "anthropic", Code: ae.StatusCode, Message: text.Clip(text.OneLine(msg), 300)}
	if ae.Response != nil {
		se.RetryAfter = retryAfter(ae.Response.Header, nowFunc())
	}
	if ae.StatusCode == http.StatusRequestEntityTooLarge || promptTooLong(ae) {
		return errors.Join(ErrContextLength, se)
	}
	return se
}

// promptTooLong reports Anthropic's refusal of a prompt over the model's
// context window. The API gives it no error code of its own: it is a 400
// invalid_request_error whose message begins "prompt is too long", the
// one signal Anthropic documents, so that is what is matched.
func promptTooLong(ae *anthropic.Error) bool {
	return ae.StatusCode == http.StatusBadRequest && ae.Type() == "invalid_request_error" &&
		strings.HasPrefix(strings.ToLower(strings.TrimSpace(ae.Message)), "prompt is too long")
}

func anthropicParams(req Request) anthropic.MessageNewParams {
	maxOut := req.MaxOutput
	if maxOut <= 0 {
		maxOut = 4096
	}
	p := anthropic.MessageNewParams{Model: req.Model, MaxTokens: int64(maxOut)}
	for _, s := range req.System {
		p.System = append(p.System, anthropic.TextBlockParam{Text: s})
	}
	for _, t := range req.Tools {
		m := schemaMap(t)
		tp := anthropic.ToolParam{Name: t.Name, Description: anthropic.String(t.Description),
			InputSchema: anthropic.ToolInputSchemaParam{Properties: m["properties"]}}
		if req, ok := m["required"].([]any); ok {
			for _, r := range req {
				if s, ok := r.(string); ok {
					tp.InputSchema.Required = append(tp.InputSchema.Required, s)
				}
			}
		}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: &tp})
	}
	// The stable prefix is the tools then the system blocks: one cache
	// breakpoint on the last of them covers both.
	if n := len(p.System); n > 0 {
		p.System[n-1].CacheControl = anthropic.NewCacheControlEphemeralParam()
	} else if n := len(p.Tools); n > 0 {
		p.Tools[n-1].OfTool.CacheControl = anthropic.NewCacheControlEphemeralParam()
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			p.Messages = append(p.Messages, anthropic.NewUserMessage(anthropic.NewTextBlock(m.Text)))
		case RoleTool:
			blk := anthropic.NewToolResultBlock(m.CallID, m.Text, m.IsError)
			if n := len(p.Messages); n > 0 && p.Messages[n-1].OfUser != nil && isToolResults(p.Messages[n-1]) {
				p.Messages[n-1].OfUser.Content = append(p.Messages[n-1].OfUser.Content, blk)
				continue
			}
			p.Messages = append(p.Messages, anthropic.NewUserMessage(blk))
		case RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if m.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
			for _, c := range m.Calls {
				var in any = json.RawMessage(c.Args)
				if !json.Valid(c.Args) {
					in = map[string]any{}
				}
				blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, in, c.Name))
			}
			if len(blocks) > 0 {
				p.Messages = append(p.Messages, anthropic.NewAssistantMessage(blocks...))
			}
		}
	}
	return p
}

func isToolResults(m anthropic.MessageParam) bool {
	for _, b := range m.OfUser.Content {
		if b.OfToolResult == nil {
			return false
		}
	}
	return len(m.OfUser.Content) > 0
}
