package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/harn-dev/harn/runtime/agent/tools"
	"github.com/harn-dev/harn/util/text"
)

// Roles of a Message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one entry of the provider-visible conversation.
type Message struct {
	Role    string     `json:"role"`
	Text    string     `json:"text,omitempty"`
	Calls   []ToolCall `json:"calls,omitempty"`   // assistant: the tool calls it made
	CallID  string     `json:"call_id,omitempty"` // tool: the call this answers
	IsError bool       `json:"is_error,omitempty"`
	Task    string     `json:"task,omitempty"` // the task that added it
}

// ToolCall is one tool call a model made.
type ToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// Request is one model call.
type Request struct {
	Model string
	// System is the stable prefix: the system prompt and the active
	// skills' instructions. Providers that cache prompts cache it.
	System    []string
	Messages  []Message
	Tools     []tools.Spec
	MaxOutput int
}

// Usage is what the provider reported for one call.
type Usage struct {
	Input      int `json:"input"`
	Output     int `json:"output"`
	CacheRead  int `json:"cache_read,omitempty"`
	CacheWrite int `json:"cache_write,omitempty"`
}

// Response is a model's answer to one call.
type Response struct {
	Text    string
	Calls   []ToolCall
	Usage   Usage
	Stop    string // the provider's finish reason
	Retries int    // attempts retried (429, 5xx)
}

// Provider is one model API.
type Provider interface {
	// Name is "openai" or "anthropic".
	Name() string
	// Complete runs one model call, streaming; onText (may be nil) gets
	// each text delta. It returns when the answer is complete or ctx ends.
	Complete(ctx context.Context, req Request, onText func(string)) (Response, error)
}

// Sentinels of this package. Match them with errors.Is.
var (
	ErrBadConfig     = errors.New("agent: bad configuration")
	ErrContextLength = errors.New("agent: the request is over the model's context window")
	ErrProvider      = errors.New("agent: the model provider failed")
	ErrNoKey         = errors.New("agent: no provider key; set HARN_PROVIDER_KEY or name a 0600 key file")
)

// StatusError is a provider's HTTP error answer: the URL it was posted
// to (without credentials or query) and the model asked, so that a wrong
// base URL or model name shows in the one line a person reads.
type StatusError struct {
	Provider   string
	Code       int
	RetryAfter time.Duration // from Retry-After, 0 when absent
	Message    string
	URL        string // the request's URL, redacted (RedactURL)
	Model      string
}

func (e *StatusError) Error() string {
	where := ""
	if e.URL != "" {
		where = " at " + e.URL
	}
	if e.Model != "" {
		where += " (model " + e.Model + ")"
	}
	return fmt.Sprintf("agent: %s answered HTTP %d%s: %s", e.Provider, e.Code, where, e.Message)
}

// withModel names the model asked in a StatusError err wraps (a
// context-length error joins one).
func withModel(err error, model string) error {
	var se *StatusError
	if errors.As(err, &se) && se.Model == "" {
		se.Model = text.Clip(text.OneLine(model), 128)
	}
	return err
}

// RedactURL is u without its user info, query and fragment, clipped: what
// an error may show of a provider's URL.
func RedactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(an unparsable URL)"
	}
	p.User, p.RawQuery, p.Fragment, p.RawFragment, p.ForceQuery = nil, "", "", "", false
	return text.Clip(text.OneLine(p.String()), 300)
}

// OpenAIBaseURL normalises an OpenAI-compatible base URL: without a
// trailing slash, with /v1 when it names only a host (http://host:8080
// is http://host:8080/v1), and without a pasted endpoint (…/v1/chat/
// completions is …/v1). A path that names its version otherwise
// (OpenRouter's /api/v1, Gemini's /v1beta/openai) is kept.
func OpenAIBaseURL(u string) string {
	u = strings.TrimSpace(u)
	if u == "" {
		return ""
	}
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return strings.TrimRight(u, "/")
	}
	path := strings.TrimRight(p.Path, "/")
	for _, end := range []string{"/chat/completions", "/completions"} {
		path = strings.TrimSuffix(path, end)
	}
	if path == "" {
		path = "/v1"
	}
	p.Path, p.RawPath = path, ""
	return p.String()
}

// AnthropicBaseURL normalises an Anthropic base URL: the SDK adds
// /v1/messages, so a URL given with /v1 (or the whole endpoint) loses it,
// and a trailing slash goes.
func AnthropicBaseURL(u string) string {
	u = strings.TrimSpace(u)
	if u == "" {
		return ""
	}
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return strings.TrimRight(u, "/")
	}
	path := strings.TrimRight(p.Path, "/")
	path = strings.TrimSuffix(path, "/messages")
	path = strings.TrimSuffix(path, "/v1")
	p.Path, p.RawPath = path, ""
	return p.String()
}

// Unwrap makes a StatusError an ErrProvider.
func (e *StatusError) Unwrap() error { return ErrProvider }

// Retryable reports a status worth retrying: 429 and 5xx.
func (e *StatusError) Retryable() bool { return e.Code == 429 || e.Code >= 500 }
