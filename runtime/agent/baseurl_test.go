package agent

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
)

// TestProviderBaseURLsAreNormalised: a base URL with or without its
// version, with a trailing slash, or the whole endpoint pasted, reaches
// the API's one path (the scripted servers answer 404 elsewhere).
func TestProviderBaseURLsAreNormalised(t *testing.T) {
	o := modeltest.New(t)
	o.SetFallback(func(map[string]any) modeltest.Reply { return modeltest.Text("ok") })
	origin := strings.TrimSuffix(o.URL(), "/v1")
	for _, u := range []string{origin, origin + "/", origin + "/v1", origin + "/v1/", origin + "/v1/chat/completions"} {
		p := NewOpenAI(ProviderConfig{BaseURL: u, Key: "k"})
		if r, err := p.Complete(context.Background(), Request{Model: "m", Messages: []Message{{Role: RoleUser, Text: "hi"}}}, nil); err != nil || r.Text != "ok" {
			t.Errorf("openai base %s: %q %v", u, r.Text, err)
		}
	}
	a := modeltest.NewAnthropic(t)
	a.SetFallback(func(map[string]any) modeltest.Reply {
		return modeltest.AText("ok", modeltest.AUsage{Input: 1, Output: 1})
	})
	for _, u := range []string{a.URL(), a.URL() + "/", a.URL() + "/v1", a.URL() + "/v1/", a.URL() + "/v1/messages"} {
		p := NewAnthropic(ProviderConfig{BaseURL: u, Key: "k"})
		if r, err := p.Complete(context.Background(), Request{Model: "m", MaxOutput: 16, Messages: []Message{{Role: RoleUser, Text: "hi"}}}, nil); err != nil || r.Text != "ok" {
			t.Errorf("anthropic base %s: %q %v", u, r.Text, err)
		}
	}
	for in, want := range map[string]string{
		"https://openrouter.ai/api/v1/":                            "https://openrouter.ai/api/v1",
		"https://generativelanguage.googleapis.com/v1beta/openai/": "https://generativelanguage.googleapis.com/v1beta/openai",
		"http://localhost:11434":                                   "http://localhost:11434/v1",
	} {
		if got := OpenAIBaseURL(in); got != want {
			t.Errorf("OpenAIBaseURL(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestAProvidersHTTPErrorNamesTheURLAndTheModel: a 404 (a wrong base URL
// or model) says where it was posted and which model was asked, without
// the URL's credentials or query.
func TestAProvidersHTTPErrorNamesTheURLAndTheModel(t *testing.T) {
	o := modeltest.New(t)
	origin := strings.TrimSuffix(o.URL(), "/v1")
	host := strings.TrimPrefix(origin, "http://")
	p := NewOpenAI(ProviderConfig{BaseURL: "http://user:secret@" + host + "/nowhere?token=t", Key: "k"})
	_, err := p.Complete(context.Background(), Request{Model: "gpt-x", Messages: []Message{{Role: RoleUser, Text: "hi"}}}, nil)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != 404 {
		t.Fatalf("error %v", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "http://"+host+"/nowhere/chat/completions") || !strings.Contains(msg, "model gpt-x") ||
		strings.Contains(msg, "secret") || strings.Contains(msg, "token=") {
		t.Fatalf("the error does not name the URL and model, or leaks: %s", msg)
	}
	a := modeltest.NewAnthropic(t, modeltest.AError(404, "not_found_error", "model: claude-x"))
	pa := NewAnthropic(ProviderConfig{BaseURL: a.URL(), Key: "k"})
	_, err = pa.Complete(context.Background(), Request{Model: "claude-x", MaxOutput: 16, Messages: []Message{{Role: RoleUser, Text: "hi"}}}, nil)
	if msg := errString(err); !strings.Contains(msg, a.URL()+"/v1/messages") || !strings.Contains(msg, "model claude-x") {
		t.Fatalf("anthropic's error: %s", msg)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
