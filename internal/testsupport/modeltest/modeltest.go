// Package modeltest is the scripted model server the module's tests share:
// an OpenAI-compatible chat-completions endpoint (POST /v1/chat/completions)
// speaking the real streaming wire format (server-sent events of
// chat.completion.chunk objects, then `data: [DONE]`), answering from a
// script. It records every request body, so tests can assert on the exact
// messages and tools a request carried. Only test files import it.
package modeltest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Reply is one scripted answer: an HTTP error (Status, Header, Body), a
// stream of chunks (each the JSON of one chat.completion.chunk), or, when
// Func is set, whatever Func builds from the request.
type Reply struct {
	Status int
	Header map[string]string
	Body   string
	Chunks []string
	// Func answers from the decoded request body; it may return a
	// Reply with Status or Chunks.
	Func func(req map[string]any) Reply
	// Hold, when set, makes the stream wait on it after its first chunk
	// (a generation in progress) until it is closed or the client goes.
	Hold <-chan struct{}
	// Gen, when set, streams the chunks it makes after Chunks, one per
	// call with i from 0, until it returns false or a write fails (the
	// client stopped reading): a stream of any size that is never held
	// whole. Sent counts the bytes the server wrote.
	Gen func(i int) (chunk string, more bool)
}

// Server is the scripted model server. Safe for concurrent use.
type Server struct {
	srv  *httptest.Server
	mu   sync.Mutex
	next []Reply
	// Fallback answers when the script is exhausted; nil means HTTP 500.
	fallback func(req map[string]any) Reply
	reqs     []map[string]any
	raw      []string
	headers  []http.Header
	arrived  chan struct{}
	sent     atomic.Int64 // bytes of streamed answers written
	// anthropic: the server speaks Anthropic's Messages API
	// (POST /v1/messages, named SSE events, no [DONE]) instead.
	anthropic bool
}

// New starts a server answering replies in order; it closes at cleanup.
func New(t testing.TB, replies ...Reply) *Server {
	s := &Server{next: replies, arrived: make(chan struct{}, 1024)}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the base URL a client takes: with /v1 for chat completions,
// the bare origin for Anthropic's Messages API (its SDK adds v1/messages).
func (s *Server) URL() string {
	if s.anthropic {
		return s.srv.URL
	}
	return s.srv.URL + "/v1"
}

// Add appends replies to the script.
func (s *Server) Add(r ...Reply) {
	s.mu.Lock()
	s.next = append(s.next, r...)
	s.mu.Unlock()
}

// SetFallback answers every request past the script with f.
func (s *Server) SetFallback(f func(req map[string]any) Reply) {
	s.mu.Lock()
	s.fallback = f
	s.mu.Unlock()
}

// Requests returns the decoded request bodies so far, in arrival order.
func (s *Server) Requests() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.reqs...)
}

// Raw returns the raw request bodies so far.
func (s *Server) Raw() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.raw...)
}

// Close stops the server and waits for the requests in flight to end (it
// runs at cleanup too).
func (s *Server) Close() { s.srv.Close() }

// Sent is the bytes of streamed answers the server wrote so far: with a
// Gen reply, how far the client read before it stopped.
func (s *Server) Sent() int64 { return s.sent.Load() }

// Headers returns the request headers so far, in arrival order (the
// credential a client sent: Authorization, x-api-key).
func (s *Server) Headers() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.headers...)
}

// Arrived receives one value per request that arrived (buffered).
func (s *Server) Arrived() <-chan struct{} { return s.arrived }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	path := "/v1/chat/completions"
	if s.anthropic {
		path = "/v1/messages"
	}
	if r.URL.Path != path {
		http.NotFound(w, r)
		return
	}
	b, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	var req map[string]any
	_ = json.Unmarshal(b, &req)
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.raw = append(s.raw, string(b))
	s.headers = append(s.headers, r.Header.Clone())
	var rp Reply
	switch {
	case len(s.next) > 0:
		rp = s.next[0]
		s.next = s.next[1:]
	case s.fallback != nil:
		rp = s.fallback(req)
	default:
		rp = Reply{Status: 500, Body: `{"error":{"message":"script exhausted","type":"server_error"}}`}
	}
	s.mu.Unlock()
	select {
	case s.arrived <- struct{}{}:
	default:
	}
	if rp.Func != nil {
		hold := rp.Hold
		rp = rp.Func(req)
		if rp.Hold == nil {
			rp.Hold = hold
		}
	}
	for k, v := range rp.Header {
		w.Header().Set(k, v)
	}
	if rp.Status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rp.Status)
		io.WriteString(w, rp.Body)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	send := func(c string) bool {
		var n int
		var err error
		if s.anthropic {
			n, err = fmt.Fprintf(w, "event: %s\n", eventType(c))
			s.sent.Add(int64(n))
		}
		if err == nil {
			n, err = fmt.Fprintf(w, "data: %s\n\n", c)
			s.sent.Add(int64(n))
		}
		if fl != nil && err == nil {
			fl.Flush()
		}
		return err == nil && r.Context().Err() == nil
	}
	for i, c := range rp.Chunks {
		if !send(c) {
			return
		}
		if i == 0 && rp.Hold != nil {
			select {
			case <-rp.Hold:
			case <-r.Context().Done():
				return
			}
		}
	}
	for i := 0; rp.Gen != nil; i++ {
		c, more := rp.Gen(i)
		if !more {
			break
		}
		if !send(c) {
			return
		}
	}
	if !s.anthropic {
		io.WriteString(w, "data: [DONE]\n\n")
	}
	if fl != nil {
		fl.Flush()
	}
}

// Chunk builds one chunk's JSON with a delta (itself JSON) and a finish
// reason ("" for none).
func Chunk(delta, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}`
}

// Usage builds the final usage chunk.
func Usage(in, out int) string {
	return fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, in, out, in+out)
}

// Text streams s in two deltas, then usage.
func Text(s string) Reply {
	h := len(s) / 2
	return Reply{Chunks: []string{
		Chunk(`{"role":"assistant","content":`+JS(s[:h])+`}`, ""),
		Chunk(`{"content":`+JS(s[h:])+`}`, "stop"),
		Usage(20, 5),
	}}
}

// Call is one tool call of a scripted answer.
type Call struct{ ID, Name, Args string }

// Calls streams the tool calls, each one's arguments split over two
// deltas; withIndex false leaves the index out, as some backends do.
func Calls(withIndex bool, calls ...Call) Reply {
	cs := []string{Chunk(`{"role":"assistant","content":null}`, "")}
	for i, c := range calls {
		idx := ""
		if withIndex {
			idx = fmt.Sprintf(`"index":%d,`, i)
		}
		h := len(c.Args) / 2
		cs = append(cs,
			Chunk(`{"tool_calls":[{`+idx+`"id":"`+c.ID+`","type":"function","function":{"name":"`+c.Name+`","arguments":`+JS(c.Args[:h])+`}}]}`, ""),
			Chunk(`{"tool_calls":[{`+idx+`"id":"`+c.ID+`","function":{"arguments":`+JS(c.Args[h:])+`}}]}`, ""))
	}
	cs = append(cs, Chunk(`{}`, "tool_calls"), Usage(30, 10))
	return Reply{Chunks: cs}
}

// ContextLengthError is the error an OpenAI-compatible server returns for
// a request over the model's window.
func ContextLengthError() Reply {
	return Reply{Status: 400, Body: `{"error":{"message":"This model's maximum context length is 4096 tokens. However, your messages resulted in 5000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`}
}

// RateLimited is a 429 with Retry-After (seconds).
func RateLimited(after string) Reply {
	return Reply{Status: 429, Header: map[string]string{"Retry-After": after}, Body: `{"error":{"message":"rate limited","type":"rate_limit_error"}}`}
}

// JS quotes s as a JSON string.
func JS(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Messages lists a request's messages as "role:content" (string content).
func Messages(req map[string]any) []string {
	var out []string
	ms, _ := req["messages"].([]any)
	for _, m := range ms {
		mm, _ := m.(map[string]any)
		c, _ := mm["content"].(string)
		out = append(out, fmt.Sprint(mm["role"])+":"+c)
	}
	return out
}

// ToolNames lists the names of a request's tools.
func ToolNames(req map[string]any) []string {
	var out []string
	ts, _ := req["tools"].([]any)
	for _, t := range ts {
		tm, _ := t.(map[string]any)
		f, _ := tm["function"].(map[string]any)
		if n, ok := f["name"].(string); ok {
			out = append(out, n)
		}
	}
	return out
}

// Contains reports whether any of list contains sub.
func Contains(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
