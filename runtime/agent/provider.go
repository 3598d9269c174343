package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/harn-dev/harn/runtime/agent/tools"
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

// StatusError is a provider's HTTP error answer.
type StatusError struct {
	Provider   string
	Code       int
	RetryAfter time.Duration // from Retry-After, 0 when absent
	Message    string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("agent: %s answered HTTP %d: %s", e.Provider, e.Code, e.Message)
}

// Unwrap makes a StatusError an ErrProvider.
func (e *StatusError) Unwrap() error { return ErrProvider }

// Retryable reports a status worth retrying: 429 and 5xx.
func (e *StatusError) Retryable() bool { return e.Code == 429 || e.Code >= 500 }
