package context

import (
	stdctx "context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/agent"
	"github.com/harn-dev/harn/runtime/agent/tools"
)

// loopSteps is how many tool exchanges one case of the loop property runs.
const loopSteps = 200

// sizedBox is the loop property's tool box: "read" returns an output of
// the size drawn for its step and, at drawn steps, sends a steer.
type sizedBox struct {
	rt      *runtime.Runtime
	session string
	sizes   []int
	steers  map[int]bool

	mu      sync.Mutex
	outputs map[string]string // call id -> output
	steered []string
}

var readSchema = json.RawMessage(`{"type":"object","properties":{"step":{"type":"integer"}},"required":["step"]}`)

func (b *sizedBox) Specs(_, _ string) []tools.Spec {
	return []tools.Spec{{Name: "read", Description: "read the next file", Schema: readSchema, Provider: "core", Hash: "h-read"}}
}
func (b *sizedBox) Prompt(_, _, _ string) []string    { return nil }
func (b *sizedBox) Instructions(_, _ string) []string { return nil }
func (b *sizedBox) EndStep(_, _ string)               {}

func (b *sizedBox) Run(_ stdctx.Context, c tools.Call) (tools.Result, error) {
	var a struct {
		Step int `json:"step"`
	}
	if err := json.Unmarshal(c.Args, &a); err != nil || a.Step < 0 || a.Step >= len(b.sizes) {
		return tools.Result{Content: "bad step", IsError: true}, fmt.Errorf("read: bad step %s", c.Args)
	}
	out := filler(b.sizes[a.Step], a.Step)
	b.mu.Lock()
	b.outputs[c.ID] = out
	b.mu.Unlock()
	if b.steers[a.Step] {
		s := fmt.Sprintf("steer %d: also check the docs", a.Step)
		if _, err := b.rt.Steer(b.session, s); err == nil {
			b.mu.Lock()
			b.steered = append(b.steered, s)
			b.mu.Unlock()
		}
	}
	return tools.Result{Content: out}, nil
}

// wireRequest is what the property reads of a chat-completions request.
type wireRequest struct {
	Messages []struct {
		Role      string `json:"role"`
		Content   any    `json:"content"`
		ToolCalls []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
		ToolCallID string `json:"tool_call_id"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

// content is a message's text: a string, or the text parts of an array.
func content(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, p := range c {
			if m, ok := p.(map[string]any); ok {
				s, _ := m["text"].(string)
				b.WriteString(s)
			}
		}
		return b.String()
	}
	return ""
}

// asRequest rebuilds the loop's request from the wire, so that the same
// tokenizer counts what the server received.
func asRequest(raw string) (agent.Request, error) {
	var w wireRequest
	if err := json.Unmarshal([]byte(raw), &w); err != nil {
		return agent.Request{}, err
	}
	var r agent.Request
	for _, m := range w.Messages {
		msg := agent.Message{Role: m.Role, Text: content(m.Content), CallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			msg.Calls = append(msg.Calls, agent.ToolCall{ID: c.ID, Name: c.Function.Name, Args: json.RawMessage(c.Function.Arguments)})
		}
		if m.Role == "system" {
			r.System = append(r.System, msg.Text)
			continue
		}
		r.Messages = append(r.Messages, msg)
	}
	for _, t := range w.Tools {
		r.Tools = append(r.Tools, tools.Spec{Name: t.Function.Name, Description: t.Function.Description, Schema: t.Function.Parameters})
	}
	return r, nil
}

// TestPropertyLoopOverHTTPWithinBudget is the property through
// harn's agent loop and the real wire format: a scripted OpenAI-compatible
// server, a 4k-token window, 200 tool exchanges of random sizes (and
// steers), and on every request the server received: no request over the
// usable budget (counted with the same tokenizer), every pin and the
// instructions present, every output so far recallable byte for byte, the
// history holding everything.
func TestPropertyLoopOverHTTPWithinBudget(t *testing.T) {
	if f := flag.Lookup("rapid.checks"); f != nil && f.Value.String() == "100" {
		_ = f.Value.Set("2") // each case is 200 model calls over HTTP (about 20 s under -race)
		defer func() { _ = f.Value.Set("100") }()
	}
	model, err := agent.ModelFor("scripted", 4096, 512)
	if err != nil {
		t.Fatal(err)
	}
	usable := model.UsableInput()
	rapid.Check(t, func(rt *rapid.T) {
		mode := rapid.SampledFrom([]string{"off", "llm", "invalid-once", "invalid-twice", "unavailable"}).Draw(rt, "mode")
		sizes := rapid.SliceOfN(rapid.IntRange(0, 12_000), loopSteps, loopSteps).Draw(rt, "sizes")
		steers := map[int]bool{}
		for _, s := range rapid.SliceOfN(rapid.IntRange(0, loopSteps-1), 0, 8).Draw(rt, "steers") {
			steers[s] = true
		}
		work := t.TempDir()
		if err := os.WriteFile(filepath.Join(work, "AGENTS.md"), []byte("Always run the tests."), 0o600); err != nil {
			rt.Fatal(err)
		}
		var compactions []Compaction
		var cmu sync.Mutex
		sp := NewSpace(openPebble(t, ""), Options{Compaction: mode != "off", Condenser: &scriptedModel{mode: mode}, PreviewBytes: 1024,
			OnCompact: func(c Compaction) { cmu.Lock(); compactions = append(compactions, c); cmu.Unlock() }})
		const session = "s1"
		lane, err := sp.Open(session, work)
		if err != nil {
			rt.Fatal(err)
		}
		pins := []string{"keep the public API stable", "never touch vendor/"}
		pinSeq := map[string]string{}
		for _, p := range pins {
			if err := lane.Pin(user("pins", p)); err != nil {
				rt.Fatal(err)
			}
			h := lane.Report().Items
			pinSeq[p] = fmt.Sprintf("%x", h[len(h)-1].Seq)
		}

		r, err := runtime.New(runtime.Config{Ledger: runtime.NewMemLedger(), Key: []byte("k")})
		if err != nil {
			rt.Fatal(err)
		}
		box := &sizedBox{rt: r, session: session, sizes: sizes, steers: steers, outputs: map[string]string{}}
		tb := Box{Box: box, Space: sp}
		if _, err := r.SetCatalog(agent.Catalog, agent.Capabilities(tb.Specs("", ""))); err != nil {
			rt.Fatal(err)
		}
		if err := r.OpenSession(session, runtime.SessionConfig{Catalog: agent.Catalog, Workdir: work, Budget: model.Budget(0)}); err != nil {
			rt.Fatal(err)
		}

		// The server asks for one read a request until loopSteps, then
		// answers; each request is checked as it arrives (the loop waits
		// on the answer, so the lane is still).
		var (
			smu      sync.Mutex
			failures []string
			issued   []string // call ids answered so far, in order
		)
		fail := func(f string, a ...any) { failures = append(failures, fmt.Sprintf(f, a...)) }
		srv := modeltest.New(t)
		answer := func(map[string]any) modeltest.Reply { // outside the server's lock
			smu.Lock()
			defer smu.Unlock()
			raws := srv.Raw()
			step := len(raws) - 1
			check(raws[step], step, usable, lane, box, pins, pinSeq, issued, fail)
			if len(issued) >= loopSteps {
				return modeltest.Text("done")
			}
			id := fmt.Sprintf("call_%d", len(issued))
			issued = append(issued, id)
			return modeltest.Calls(true, modeltest.Call{ID: id, Name: "read", Args: fmt.Sprintf(`{"step":%d}`, len(issued)-1)})
		}
		srv.SetFallback(func(map[string]any) modeltest.Reply { return modeltest.Reply{Func: answer} })
		prov := agent.NewOpenAI(agent.ProviderConfig{BaseURL: srv.URL(), Key: "k", Retry: agent.Retry{Base: time.Millisecond, Max: 5 * time.Millisecond}})
		ex, err := agent.New(agent.Config{Runtime: r, Session: session, Provider: prov, Box: tb, Model: model, Context: lane,
			Dir: work, Bounds: agent.Bounds{Steps: loopSteps + 2}})
		if err != nil {
			rt.Fatal(err)
		}
		if _, err := r.Start(session, runtime.Request{Text: "work through the files", Grants: []runtime.Grant{{Level: runtime.Execute, Capability: "*"}}}); err != nil {
			rt.Fatal(err)
		}
		ctx, cancel := stdctx.WithTimeout(stdctx.Background(), 2*time.Minute)
		defer cancel()
		run, err := r.Next(ctx, session)
		if err != nil {
			rt.Fatal(err)
		}
		res := ex.RunTask(ctx, run)
		smu.Lock()
		defer smu.Unlock()
		if len(failures) > 0 {
			rt.Fatalf("mode %s: %d of %d requests failed the property; first: %s", mode, len(failures), len(srv.Raw()), failures[0])
		}
		if res.Status != runtime.StatusSucceeded {
			rt.Fatalf("mode %s: the task ended %s: %+v", mode, res.Status, res)
		}
		if n := len(srv.Raw()); n != loopSteps+1 {
			rt.Fatalf("mode %s: %d requests, want %d", mode, n, loopSteps+1)
		}
		cmu.Lock()
		defer cmu.Unlock()
		if len(compactions) == 0 {
			rt.Fatal("200 exchanges on a 4k window never compacted")
		}
		for _, c := range compactions {
			if (mode == "invalid-twice" || mode == "unavailable") && c.Method == MethodLLM {
				rt.Fatalf("mode %s produced an llm checkpoint", mode)
			}
		}
	})
}

// check is the property on one request the server received, before it
// answers: step is its index; issued the call ids answered before it.
func check(raw string, step, usable int, lane *Lane, box *sizedBox, pins []string, pinSeq map[string]string,
	issued []string, fail func(string, ...any)) {
	req, err := asRequest(raw)
	if err != nil {
		fail("request %d does not decode: %v", step, err)
		return
	}
	if n := agent.Estimate(req); n > usable {
		fail("request %d: %d tokens, over the usable budget %d", step, n, usable)
	}
	var all strings.Builder
	for _, m := range req.Messages {
		all.WriteString(m.Text)
		all.WriteByte('\n')
	}
	view := all.String()
	if !strings.Contains(view, "Always run the tests.") {
		fail("request %d: the instructions are missing", step)
	}
	for _, p := range pins {
		if !strings.Contains(view, p) && !strings.Contains(view, "[pin:"+pinSeq[p]+"]") {
			fail("request %d: pin %q lost", step, p)
		}
	}
	// Every output so far, recallable byte for byte; the history holds
	// the prompt, the pins, every call and its result, every steer.
	box.mu.Lock()
	outputs := make(map[string]string, len(box.outputs))
	for k, v := range box.outputs {
		outputs[k] = v
	}
	steered := append([]string(nil), box.steered...)
	box.mu.Unlock()
	calls, results := map[string]bool{}, map[string]bool{}
	texts := map[string]bool{}
	for _, it := range lane.Report().Items {
		if it.Role == agent.RoleTool {
			want, ok := outputs[it.CallID]
			if !ok {
				fail("request %d: result of %s that the box never gave", step, it.CallID)
				continue
			}
			got, _, err := lane.Recall(it.Ref, 0, -1)
			if err != nil || string(got) != want {
				fail("request %d: %s (%s) not recalled byte for byte: %v", step, it.Ref, it.CallID, err)
			}
			results[it.CallID] = true
		}
	}
	for _, m := range lane.History() {
		for _, c := range m.Calls {
			calls[c.ID] = true
		}
		if m.Role == agent.RoleUser {
			texts[m.Text] = true
		}
	}
	for _, id := range issued {
		if !calls[id] || !results[id] {
			fail("request %d: the history lacks call %s or its result", step, id)
		}
	}
	for _, s := range append(append([]string{"work through the files"}, pins...), steered...) {
		if !texts[s] {
			fail("request %d: the history lacks %q", step, s)
		}
	}
}
