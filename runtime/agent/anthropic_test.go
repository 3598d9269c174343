package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/agent"
	"github.com/harn-dev/harn/runtime/agent/tools"
	"github.com/harn-dev/harn/util/clock"
)

var fastRetry = agent.Retry{Base: time.Millisecond, Max: 5 * time.Millisecond}

func anthropicFor(srv *modeltest.Server, r agent.Retry) *agent.Anthropic {
	return agent.NewAnthropic(agent.ProviderConfig{BaseURL: srv.URL(), Key: "k", Retry: r})
}

// blocks decodes a request's messages as role and content blocks.
type aMessage struct {
	Role    string           `json:"role"`
	Content []map[string]any `json:"content"`
}

func aMessages(t *testing.T, raw string) []aMessage {
	t.Helper()
	var body struct {
		Messages []aMessage `json:"messages"`
	}
	if err := json.Unmarshal([]byte(raw), &body); err != nil {
		t.Fatal(err)
	}
	return body.Messages
}

func TestAnthropicStreamsTextAndSurfacesUsage(t *testing.T) {
	srv := modeltest.NewAnthropic(t, modeltest.AText("hello there", modeltest.AUsage{Input: 12, Output: 7, CacheRead: 100, CacheWrite: 40}))
	var deltas []string
	r, err := anthropicFor(srv, fastRetry).Complete(context.Background(), agent.Request{Model: "claude-test", System: []string{"be brief"},
		Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}}, func(s string) { deltas = append(deltas, s) })
	if err != nil {
		t.Fatal(err)
	}
	if r.Text != "hello there" || len(deltas) != 2 || deltas[0]+deltas[1] != "hello there" || r.Stop != "end_turn" {
		t.Fatalf("response %+v deltas %q", r, deltas)
	}
	// Input counts every input token: the uncached part and the cache's.
	if want := (agent.Usage{Input: 152, Output: 7, CacheRead: 100, CacheWrite: 40}); r.Usage != want {
		t.Fatalf("usage %+v, want %+v", r.Usage, want)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0]["stream"] != true || reqs[0]["model"] != "claude-test" {
		t.Fatalf("request %v", reqs)
	}
}

// TestAnthropicCachesTheStablePrefix: one cache_control breakpoint, on
// the last system block, which covers the tools before it; no message
// carries one.
func TestAnthropicCachesTheStablePrefix(t *testing.T) {
	srv := modeltest.NewAnthropic(t, modeltest.AText("ok", modeltest.AUsage{Input: 1, Output: 1}))
	specs := newTestBox().Specs("", "")
	_, err := anthropicFor(srv, fastRetry).Complete(context.Background(), agent.Request{Model: "claude-test",
		System: []string{"base prompt", "skill instructions"}, Tools: specs,
		Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw := srv.Raw()[0]
	if n := strings.Count(raw, `"cache_control"`); n != 1 {
		t.Fatalf("%d cache_control breakpoints in %s", n, raw)
	}
	var body struct {
		System []struct {
			Text         string         `json:"text"`
			CacheControl map[string]any `json:"cache_control"`
		} `json:"system"`
		Tools []struct {
			Name        string         `json:"name"`
			InputSchema map[string]any `json:"input_schema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(raw), &body); err != nil {
		t.Fatal(err)
	}
	if len(body.System) != 2 || body.System[1].Text != "skill instructions" || body.System[1].CacheControl["type"] != "ephemeral" || body.System[0].CacheControl != nil {
		t.Fatalf("system %+v", body.System)
	}
	if len(body.Tools) != len(specs) || body.Tools[0].Name != "echo" || body.Tools[0].InputSchema["type"] != "object" {
		t.Fatalf("tools %+v", body.Tools)
	}
}

func TestAnthropicToolUseRoundTripThroughTheLoop(t *testing.T) {
	srv := modeltest.NewAnthropic(t,
		modeltest.AToolUse("let me look", modeltest.AUsage{Input: 30, Output: 9, CacheWrite: 200},
			modeltest.Call{ID: "toolu_1", Name: "echo", Args: `{"path":"a.txt"}`}),
		modeltest.AText("the file says hi", modeltest.AUsage{Input: 50, Output: 5, CacheRead: 200}))
	f := newFixtureWith(t, anthropicFor(srv, fastRetry))
	close(f.box.release)
	task := f.start(t, "read a.txt", allGrants)
	end := f.waitEvent(t, agent.EvTurnEnd)
	if end.Status != "succeeded" || end.Text != "the file says hi" {
		t.Fatalf("end %+v", end)
	}
	raw := srv.Raw()
	if len(raw) != 2 {
		t.Fatalf("%d requests", len(raw))
	}
	ms := aMessages(t, raw[1])
	if len(ms) != 3 || ms[0].Role != "user" || ms[1].Role != "assistant" || ms[2].Role != "user" {
		t.Fatalf("messages %+v", ms)
	}
	use := ms[1].Content[len(ms[1].Content)-1]
	if use["type"] != "tool_use" || use["id"] != "toolu_1" || use["name"] != "echo" {
		t.Fatalf("assistant blocks %+v", ms[1].Content)
	}
	if in, _ := use["input"].(map[string]any); in["path"] != "a.txt" {
		t.Fatalf("tool_use input %+v", use["input"])
	}
	res := ms[2].Content[0]
	if res["type"] != "tool_result" || res["tool_use_id"] != "toolu_1" || !strings.Contains(raw[1], `ran echo {\"path\":\"a.txt\"}`) {
		t.Fatalf("tool result %+v", ms[2].Content)
	}
	mc := f.records(t, task, runtime.RecModel)
	if len(mc) != 2 || mc[0].Usage == nil || mc[1].Usage == nil {
		t.Fatalf("model call records %+v", mc)
	}
	if u := mc[0].Usage; u.Provider != "anthropic" || u.Input != 230 || u.Output != 9 || u.CacheWrite != 200 || u.Estimated == 0 {
		t.Fatalf("first call usage %+v", u)
	}
	if u := mc[1].Usage; u.Input != 250 || u.CacheRead != 200 {
		t.Fatalf("second call usage %+v", u)
	}
	if b := f.records(t, task, runtime.RecBegin); len(b) != 1 || b[0].Capability != "echo" {
		t.Fatalf("call records %+v", b)
	}
}

func TestAnthropicRetries429And529And500ThenAnswers(t *testing.T) {
	srv := modeltest.NewAnthropic(t, modeltest.ARateLimited("0.001"), modeltest.AOverloaded(),
		modeltest.AError(500, "api_error", "Internal server error"), modeltest.AText("ok", modeltest.AUsage{Input: 1, Output: 1}))
	r, err := anthropicFor(srv, fastRetry).Complete(context.Background(), agent.Request{Model: "claude-test",
		Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}}, nil)
	if err != nil || r.Text != "ok" || r.Retries != 3 {
		t.Fatalf("response %+v err %v", r, err)
	}
}

func TestAnthropicRetryIsBounded(t *testing.T) {
	srv := modeltest.NewAnthropic(t, modeltest.AOverloaded(), modeltest.AOverloaded(), modeltest.AOverloaded(),
		modeltest.AOverloaded(), modeltest.AText("never", modeltest.AUsage{}))
	r, err := anthropicFor(srv, fastRetry).Complete(context.Background(), agent.Request{Model: "claude-test",
		Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}}, nil)
	var se *agent.StatusError
	if !errors.As(err, &se) || se.Code != 529 || !errors.Is(err, agent.ErrProvider) || se.Message != "Overloaded" {
		t.Fatalf("err %v", err)
	}
	if n := len(srv.Requests()); n != agent.DefaultRetry.Attempts || r.Retries != n-1 {
		t.Fatalf("%d requests, %d retries; want %d attempts", n, r.Retries, agent.DefaultRetry.Attempts)
	}
}

// TestAnthropicHonoursRetryAfter: the wait before the retry is the
// Retry-After the 429 named, on the retry's clock.
func TestAnthropicHonoursRetryAfter(t *testing.T) {
	fc := clock.NewFake(time.Unix(1_700_000_000, 0))
	srv := modeltest.NewAnthropic(t, modeltest.ARateLimited("7"), modeltest.AText("ok", modeltest.AUsage{Input: 1, Output: 1}))
	p := anthropicFor(srv, agent.Retry{Base: time.Hour, Max: time.Minute, Clock: fc})
	done := make(chan error, 1)
	go func() {
		_, err := p.Complete(context.Background(), agent.Request{Model: "claude-test", Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}}, nil)
		done <- err
	}()
	if !fc.BlockUntil(1, 20*time.Second) {
		t.Fatal("no retry timer")
	}
	if due, ok := fc.NextDue(); !ok || due.Sub(fc.Now()) != 7*time.Second {
		t.Fatalf("retry due in %v, want 7s", due.Sub(fc.Now()))
	}
	fc.Advance(7 * time.Second)
	select {
	case err := <-done:
		if err != nil || len(srv.Requests()) != 2 {
			t.Fatalf("err %v, %d requests", err, len(srv.Requests()))
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the retry did not run")
	}
}

func TestAnthropicPromptTooLongIsAContextLengthError(t *testing.T) {
	srv := modeltest.NewAnthropic(t, modeltest.APromptTooLong())
	_, err := anthropicFor(srv, fastRetry).Complete(context.Background(), agent.Request{Model: "claude-test",
		Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}}, nil)
	var se *agent.StatusError
	if !errors.Is(err, agent.ErrContextLength) || !errors.As(err, &se) || se.Code != 400 || len(srv.Requests()) != 1 {
		t.Fatalf("err %v after %d requests", err, len(srv.Requests()))
	}
	// Another 400 is not one.
	srv = modeltest.NewAnthropic(t, modeltest.AError(400, "invalid_request_error", "messages: field required"))
	_, err = anthropicFor(srv, fastRetry).Complete(context.Background(), agent.Request{Model: "claude-test"}, nil)
	if errors.Is(err, agent.ErrContextLength) || !errors.As(err, &se) || se.Code != 400 {
		t.Fatalf("err %v", err)
	}
}

// TestAnthropicPromptTooLongRecoversWithTheCurrentTurn: through the loop,
// the refusal sets the recovery checkpoint and the retry sends only the
// current turn.
func TestAnthropicPromptTooLongRecoversWithTheCurrentTurn(t *testing.T) {
	srv := modeltest.NewAnthropic(t, modeltest.AText("first", modeltest.AUsage{Input: 1, Output: 1}),
		modeltest.APromptTooLong(), modeltest.AText("second", modeltest.AUsage{Input: 1, Output: 1}))
	f := newFixtureWith(t, anthropicFor(srv, fastRetry))
	f.start(t, "one", allGrants)
	f.waitEvent(t, agent.EvTurnEnd)
	waitIdle(t, f.rt)
	task := f.start(t, "two", allGrants)
	if end := f.waitEvent(t, agent.EvTurnEnd); end.Status != "succeeded" || end.Text != "second" {
		t.Fatalf("end %+v", end)
	}
	raw := srv.Raw()
	if len(raw) != 3 || !strings.Contains(raw[1], `"one"`) || strings.Contains(raw[2], `"one"`) {
		t.Fatalf("the retry kept the old turn: %v", raw)
	}
	if mc := f.records(t, task, runtime.RecModel); len(mc) != 2 || mc[0].Usage.Error != "context_length" {
		t.Fatalf("model calls %+v", mc)
	}
}

var _ tools.Box = (*testBox)(nil)
