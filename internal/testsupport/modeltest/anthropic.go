package modeltest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// NewAnthropic starts a scripted server speaking Anthropic's Messages API
// (POST /v1/messages): a Reply's Chunks are the JSON of its stream events
// (message_start, content_block_start/delta/stop, message_delta,
// message_stop), each sent as a named server-sent event; an error Reply
// answers with Anthropic's error body. It closes at cleanup.
func NewAnthropic(t testing.TB, replies ...Reply) *Server {
	s := &Server{next: replies, arrived: make(chan struct{}, 1024), anthropic: true}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// eventType is the "type" of an event's JSON, its SSE event name.
func eventType(c string) string {
	var v struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal([]byte(c), &v)
	return v.Type
}

// AUsage is the usage of a scripted Anthropic answer: Input is
// input_tokens (the uncached part), CacheRead and CacheWrite the
// cache_read_input_tokens and cache_creation_input_tokens.
type AUsage struct{ Input, Output, CacheRead, CacheWrite int }

func aStart(u AUsage) string {
	return fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"test-model","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":%d,"output_tokens":1,"cache_read_input_tokens":%d,"cache_creation_input_tokens":%d}}}`,
		u.Input, u.CacheRead, u.CacheWrite)
}

func aEnd(stop string, u AUsage) []string {
	return []string{
		fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":%d}}`, stop, u.Output),
		`{"type":"message_stop"}`,
	}
}

// AText streams s as one text block in two text_delta events.
func AText(s string, u AUsage) Reply {
	h := len(s) / 2
	cs := []string{aStart(u),
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":` + JS(s[:h]) + `}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":` + JS(s[h:]) + `}}`,
		`{"type":"content_block_stop","index":0}`,
	}
	return Reply{Chunks: append(cs, aEnd("end_turn", u)...)}
}

// AToolUse streams an optional text block, then one tool_use block per
// call, each one's input split over two input_json_delta events.
func AToolUse(say string, u AUsage, calls ...Call) Reply {
	cs := []string{aStart(u)}
	i := 0
	if say != "" {
		cs = append(cs,
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+JS(say)+`}}`,
			`{"type":"content_block_stop","index":0}`)
		i++
	}
	for _, c := range calls {
		h := len(c.Args) / 2
		cs = append(cs,
			fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":%s,"name":%s,"input":{}}}`, i, JS(c.ID), JS(c.Name)),
			fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}`, i, JS(c.Args[:h])),
			fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}`, i, JS(c.Args[h:])),
			fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i))
		i++
	}
	return Reply{Chunks: append(cs, aEnd("tool_use", u)...)}
}

// AError is an Anthropic error answer: status, error type and message.
func AError(status int, typ, msg string) Reply {
	return Reply{Status: status, Header: map[string]string{"request-id": "req_1"},
		Body: `{"type":"error","error":{"type":` + JS(typ) + `,"message":` + JS(msg) + `}}`}
}

// ARateLimited is a 429 rate_limit_error with Retry-After (seconds).
func ARateLimited(after string) Reply {
	r := AError(429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")
	r.Header["Retry-After"] = after
	return r
}

// AOverloaded is the 529 overloaded_error.
func AOverloaded() Reply { return AError(529, "overloaded_error", "Overloaded") }

// APromptTooLong is the 400 Anthropic answers for a prompt over the
// model's context window.
func APromptTooLong() Reply {
	return AError(400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum")
}
