package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
	"github.com/harn-dev/harn/runtime/agent"
)

// TestProvidersSendNoCredentialOfTheNodesEnvironment: a session's key is
// the only credential its provider sends. The node's ANTHROPIC_* and
// OPENAI_API_KEY variables, which the SDKs read by default, reach no URL
// (a caller-named one included), nor do the headers of OPENAI_CUSTOM_HEADERS.
func TestProvidersSendNoCredentialOfTheNodesEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-node")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "tok-node")
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Node-Secret: hdr-node")
	t.Setenv("OPENAI_API_KEY", "sk-oai-node")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-Node-Secret: hdr-oai\nAuthorization: Bearer auth-oai")
	req := agent.Request{Model: "m", Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}}
	ant := modeltest.NewAnthropic(t, modeltest.AText("ok", modeltest.AUsage{Input: 1, Output: 1}))
	if _, err := agent.NewAnthropic(agent.ProviderConfig{BaseURL: ant.URL(), Retry: fastRetry}).Complete(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	oai := modeltest.New(t, modeltest.Text("ok"))
	if _, err := agent.NewOpenAI(agent.ProviderConfig{BaseURL: oai.URL(), Retry: fastRetry}).Complete(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	// With a key, the key alone is the credential.
	keyed := modeltest.New(t, modeltest.Text("ok"))
	if _, err := agent.NewOpenAI(agent.ProviderConfig{BaseURL: keyed.URL(), Key: "sk-session", Retry: fastRetry}).Complete(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	if h := keyed.Headers(); len(h) != 1 || h[0].Get("Authorization") != "Bearer sk-session" {
		t.Fatalf("a keyed request's credential: %v", h)
	}
	for _, h := range append(append(ant.Headers(), oai.Headers()...), keyed.Headers()...) {
		for name, vs := range h {
			for _, v := range vs {
				for _, secret := range []string{"sk-ant-node", "tok-node", "hdr-node", "sk-oai-node", "hdr-oai", "auth-oai"} {
					if strings.Contains(v, secret) {
						t.Errorf("header %s carries the node's %s", name, secret)
					}
				}
			}
		}
	}
}
