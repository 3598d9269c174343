package agent_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// reply is one scripted answer of the model server: an HTTP error
// (Status, Header, Body) or a stream of chat-completion chunks.
type reply struct {
	Status int
	Header map[string]string
	Body   string
	Chunks []string // the JSON of each chunk; data: [DONE] follows
}

// scripted is an OpenAI-compatible chat-completions server speaking the
// real SSE wire format, answering requests from a script in order.
type scripted struct {
	t    testing.TB
	srv  *httptest.Server
	mu   sync.Mutex
	next []reply
	reqs []map[string]any
	hold chan struct{} // when set, a request waits on it (a running generation)
}

func newScripted(t testing.TB, replies ...reply) *scripted {
	s := &scripted{t: t, next: replies}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *scripted) URL() string { return s.srv.URL + "/v1" }

func (s *scripted) add(r ...reply) {
	s.mu.Lock()
	s.next = append(s.next, r...)
	s.mu.Unlock()
}

func (s *scripted) requests() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.reqs...)
}

func (s *scripted) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	b, _ := io.ReadAll(r.Body)
	var req map[string]any
	_ = json.Unmarshal(b, &req)
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	if len(s.next) == 0 {
		s.mu.Unlock()
		http.Error(w, `{"error":{"message":"script exhausted","type":"server_error"}}`, 500)
		return
	}
	rp := s.next[0]
	s.next = s.next[1:]
	hold := s.hold
	s.mu.Unlock()
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
	fl := w.(http.Flusher)
	for i, c := range rp.Chunks {
		fmt.Fprintf(w, "data: %s\n\n", c)
		fl.Flush()
		if i == 0 && hold != nil {
			select {
			case <-hold:
			case <-r.Context().Done():
				return
			}
		}
	}
	io.WriteString(w, "data: [DONE]\n\n")
	fl.Flush()
}

// chunk builds one chunk JSON with a delta.
func chunk(delta string, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}`
}

func usageChunk(in, out int) string {
	return fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, in, out, in+out)
}

// textReply streams s in two deltas, then usage.
func textReply(s string) reply {
	h := len(s) / 2
	return reply{Chunks: []string{
		chunk(`{"role":"assistant","content":`+js(s[:h])+`}`, ""),
		chunk(`{"content":`+js(s[h:])+`}`, "stop"),
		usageChunk(20, 5),
	}}
}

// callReply streams one tool call, its arguments split over two deltas;
// withIndex false leaves the index out (backends that do).
func callReply(id, name, args string, withIndex bool, index int) []string {
	idx := ""
	if withIndex {
		idx = fmt.Sprintf(`"index":%d,`, index)
	}
	h := len(args) / 2
	return []string{
		chunk(`{"tool_calls":[{`+idx+`"id":"`+id+`","type":"function","function":{"name":"`+name+`","arguments":`+js(args[:h])+`}}]}`, ""),
		chunk(`{"tool_calls":[{`+idx+`"id":"`+id+`","function":{"arguments":`+js(args[h:])+`}}]}`, ""),
	}
}

func toolsReply(withIndex bool, calls ...[3]string) reply {
	cs := []string{chunk(`{"role":"assistant","content":null}`, "")}
	for i, c := range calls {
		cs = append(cs, callReply(c[0], c[1], c[2], withIndex, i)...)
	}
	cs = append(cs, chunk(`{}`, "tool_calls"), usageChunk(30, 10))
	return reply{Chunks: cs}
}

func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// lastUserTexts lists the user and tool message contents of a request.
func messagesOf(req map[string]any) []string {
	var out []string
	ms, _ := req["messages"].([]any)
	for _, m := range ms {
		mm, _ := m.(map[string]any)
		c, _ := mm["content"].(string)
		out = append(out, fmt.Sprint(mm["role"])+":"+c)
	}
	return out
}

func contains(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
