package agent

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/harn-dev/harn/runtime/agent/tools"
	"github.com/harn-dev/harn/util/text"
)

// ProviderConfig builds a provider.
type ProviderConfig struct {
	BaseURL    string // the API's base URL ("" = the vendor's)
	Key        string // the API key (from HARN_PROVIDER_KEY or a key file, never a flag)
	Retry      Retry
	HTTPClient *http.Client
	// Bounds: the answer's bytes and tool calls are metered as they
	// stream in (zero fields take the defaults).
	Bounds Bounds
}

// OpenAI speaks OpenAI chat completions with streaming and tool calls: it
// works against OpenAI, OpenRouter, vLLM, Ollama and llama.cpp.
type OpenAI struct {
	client openai.Client
	retry  Retry
	bounds Bounds
}

// NewOpenAI builds the OpenAI provider. It does no I/O.
func NewOpenAI(cfg ProviderConfig) *OpenAI {
	opts := []option.RequestOption{option.WithMaxRetries(0), option.WithAPIKey(cfg.Key),
		option.WithMiddleware(boundStreams(cfg.Bounds))}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(strings.TrimRight(cfg.BaseURL, "/")+"/"))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	opts = append(opts, option.WithMiddleware(sessionCredential(cfg.Key))) // credential.go
	return &OpenAI{client: openai.NewClient(opts...), retry: cfg.Retry.norm(), bounds: cfg.Bounds.Norm()}
}

// Name is "openai".
func (p *OpenAI) Name() string { return "openai" }

// Complete runs one streamed chat completion, retrying 429 and 5xx.
func (p *OpenAI) Complete(ctx context.Context, req Request, onText func(string)) (Response, error) {
	params := openAIParams(req)
	var resp Response
	retries, err := p.retry.do(ctx, func() error {
		var err error
		resp, err = p.stream(ctx, params, onText)
		return err
	})
	resp.Retries = retries
	return resp, err
}

func (p *OpenAI) stream(ctx context.Context, params openai.ChatCompletionNewParams, onText func(string)) (Response, error) {
	s := p.client.Chat.Completions.NewStreaming(ctx, params)
	defer s.Close() // over a bound: stops the read and drops the connection
	var acc accumulator
	m := newMeter(p.bounds)
	for s.Next() {
		ch := s.Current()
		if ch.JSON.Usage.Valid() && (ch.Usage.PromptTokens > 0 || ch.Usage.CompletionTokens > 0) {
			acc.resp.Usage = Usage{Input: int(ch.Usage.PromptTokens), Output: int(ch.Usage.CompletionTokens),
				CacheRead: int(ch.Usage.PromptTokensDetails.CachedTokens)}
		}
		for _, c := range ch.Choices {
			if c.Index != 0 {
				continue
			}
			if err := m.add(len(c.Delta.Content) + len(c.Delta.Refusal) + len(c.Delta.JSON.ExtraFields["reasoning_content"].Raw())); err != nil {
				return Response{}, err
			}
			if c.Delta.Content != "" {
				acc.text.WriteString(c.Delta.Content)
				if onText != nil {
					onText(c.Delta.Content)
				}
			}
			for _, tc := range c.Delta.ToolCalls {
				if err := m.add(len(tc.ID) + len(tc.Function.Name) + len(tc.Function.Arguments)); err != nil {
					return Response{}, err
				}
				acc.add(tc.JSON.Index.Valid(), int(tc.Index), tc.ID, tc.Function.Name, tc.Function.Arguments)
				if err := m.calls(len(acc.calls)); err != nil {
					return Response{}, err
				}
			}
			if c.FinishReason != "" {
				acc.resp.Stop = c.FinishReason
			}
		}
	}
	if err := s.Err(); err != nil {
		return Response{}, openAIError(err)
	}
	return acc.done(), nil
}

// accumulator merges streamed tool-call deltas: by index, or, from a
// backend that omits the index, by id (a delta with neither continues the
// last call).
type accumulator struct {
	text  strings.Builder
	calls []*ToolCall
	args  []strings.Builder
	index map[int]int
	resp  Response
}

func (a *accumulator) add(hasIndex bool, index int, id, name, args string) {
	if a.index == nil {
		a.index = map[int]int{}
	}
	at := -1
	switch {
	case hasIndex:
		if i, ok := a.index[index]; ok {
			at = i
		}
	case id != "":
		for i, c := range a.calls {
			if c.ID == id {
				at = i
			}
		}
	default:
		at = len(a.calls) - 1
	}
	if at < 0 {
		at = len(a.calls)
		a.calls = append(a.calls, &ToolCall{ID: id})
		a.args = append(a.args, strings.Builder{})
		if hasIndex {
			a.index[index] = at
		}
	}
	c := a.calls[at]
	if c.ID == "" {
		c.ID = id
	}
	if c.Name == "" {
		c.Name = name
	}
	a.args[at].WriteString(args)
}

func (a *accumulator) done() Response {
	r := a.resp
	r.Text = a.text.String()
	for i, c := range a.calls {
		c.Args = json.RawMessage(a.args[i].String())
		if len(c.Args) == 0 {
			c.Args = json.RawMessage("{}")
		}
		r.Calls = append(r.Calls, *c)
	}
	return r
}

// openAIError maps the SDK's error: 429 and 5xx to a retryable
// StatusError, a context-length refusal to ErrContextLength.
func openAIError(err error) error {
	var ae *openai.Error
	if !errors.As(err, &ae) {
		return err
	}
	se := &StatusError{Provider: "openai", Code: ae.StatusCode, Message: text.Clip(text.OneLine(ae.Message), 300)}
	if ae.Response != nil {
		se.RetryAfter = retryAfter(ae.Response.Header, nowFunc())
	}
	switch ae.Code {
	case "context_length_exceeded", "string_above_max_length":
		return errors.Join(ErrContextLength, se)
	}
	if ae.Type == "exceed_context_size_error" { // llama.cpp
		return errors.Join(ErrContextLength, se)
	}
	return se
}

func openAIParams(req Request) openai.ChatCompletionNewParams {
	p := openai.ChatCompletionNewParams{Model: req.Model,
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}}
	if req.MaxOutput > 0 {
		p.MaxCompletionTokens = openai.Int(int64(req.MaxOutput))
	}
	if len(req.System) > 0 {
		p.Messages = append(p.Messages, openai.SystemMessage(strings.Join(req.System, "\n\n")))
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			p.Messages = append(p.Messages, openai.UserMessage(m.Text))
		case RoleTool:
			p.Messages = append(p.Messages, openai.ToolMessage(m.Text, m.CallID))
		case RoleAssistant:
			a := openai.ChatCompletionAssistantMessageParam{}
			if m.Text != "" {
				a.Content.OfString = openai.String(m.Text)
			}
			for _, c := range m.Calls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: c.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: string(c.Args)}}})
			}
			p.Messages = append(p.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		}
	}
	for _, t := range req.Tools {
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: t.Name, Description: openai.String(t.Description), Parameters: schemaMap(t)}))
	}
	return p
}

// schemaMap decodes a tool's schema; a schema that is not an object is
// sent as an empty object schema.
func schemaMap(t tools.Spec) map[string]any {
	var m map[string]any
	if err := json.Unmarshal(t.Schema, &m); err != nil || m == nil {
		m = map[string]any{"type": "object"}
	}
	return m
}
