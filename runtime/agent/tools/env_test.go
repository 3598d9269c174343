package tools

import (
	"context"
	"errors"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Run again with HARN_TOOLS_TEST_MCP_ENV=1, the test binary is a stdio
// MCP server whose one tool, env, answers with its own environment.
func init() {
	if os.Getenv("HARN_TOOLS_TEST_MCP_ENV") != "1" {
		return
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "envtest", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "Answer with the server's environment."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			env := os.Environ()
			sort.Strings(env)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(env, "\n")}}}, nil, nil
		})
	_ = s.Run(context.Background(), &mcp.StdioTransport{})
	os.Exit(0)
}

// nodeSecrets puts secrets in this process's environment, as a node
// started with them has them.
func nodeSecrets(t *testing.T) {
	for k, v := range map[string]string{
		"HARN_PROVIDER_KEY": "sk-node-provider-key", "HARN_PROVIDER_KEY_FILE": "/secret/provider.key",
		"HARN_HTTP_TOKEN": "board-token-1", "OPENAI_API_KEY": "sk-openai-1", "GITHUB_TOKEN": "ghp-1",
		"AWS_SECRET_ACCESS_KEY": "aws-1", "PLAIN_SETTING": "kept-1",
	} {
		t.Setenv(k, v)
	}
}

// secretsIn lists the secrets of nodeSecrets that out holds.
func secretsIn(out string) []string {
	var got []string
	for _, s := range []string{"sk-node-provider-key", "/secret/provider.key", "board-token-1", "sk-openai-1", "ghp-1", "aws-1"} {
		if strings.Contains(out, s) {
			got = append(got, s)
		}
	}
	return got
}

// TestShellToolEnvironmentHoldsNoSecret: the shell tool's process gets
// the node's environment without HARN_PROVIDER_KEY, the key file's path,
// the board token, nor any *_API_KEY, *_TOKEN or *SECRET* name; the rest
// stays.
func TestShellToolEnvironmentHoldsNoSecret(t *testing.T) {
	nodeSecrets(t)
	b, dir := newBox(t, Config{NoMCPFiles: true, SkillDirs: []string{}})
	res, err := run(t, b, dir, "shell", map[string]any{"command": "env"})
	if err != nil {
		t.Fatal(err)
	}
	if got := secretsIn(res.Content); len(got) > 0 {
		t.Fatalf("the shell tool sees the node's secrets %q:\n%s", got, res.Content)
	}
	if !strings.Contains(res.Content, "PLAIN_SETTING=kept-1") || !strings.Contains(res.Content, "PATH=") {
		t.Fatalf("the shell tool lost the node's plain settings:\n%s", res.Content)
	}
}

// TestMCPServerEnvironmentHoldsOnlyTheSecretsItsConfigNames: a stdio MCP
// server gets the node's environment without its secrets; a secret its
// config names in env (${GITHUB_TOKEN}) is passed on, and a literal value
// is set as written.
func TestMCPServerEnvironmentHoldsOnlyTheSecretsItsConfigNames(t *testing.T) {
	nodeSecrets(t)
	s, err := ParseMCPFlag("envtest='" + os.Args[0] + "' -test.run=^$")
	if err != nil {
		t.Fatal(err)
	}
	s.Env = map[string]string{"HARN_TOOLS_TEST_MCP_ENV": "1", "GITHUB_TOKEN": "${GITHUB_TOKEN}", "SERVER_MODE": "literal-1"}
	f := newFixture(t, fixOpts{cfg: Config{MCP: []MCPServer{s}}})
	f.mustCall(ToolLoad, map[string]any{"name": "mcp__envtest__env"})
	out := f.mustCall("mcp__envtest__env", map[string]any{})
	if got := secretsIn(out); len(got) != 1 || got[0] != "ghp-1" {
		t.Fatalf("the MCP server sees secrets %q, want only the GITHUB_TOKEN its config names:\n%s", got, out)
	}
	for _, want := range []string{"GITHUB_TOKEN=ghp-1", "SERVER_MODE=literal-1", "PLAIN_SETTING=kept-1"} {
		if !strings.Contains(out, want) {
			t.Fatalf("the MCP server's environment lacks %s:\n%s", want, out)
		}
	}
}

// TestMCPConfigNamingHarnsOwnSecretIsRefused: neither a stdio server's
// env nor an HTTP server's bearer_token_env may pass the provider key on.
func TestMCPConfigNamingHarnsOwnSecretIsRefused(t *testing.T) {
	nodeSecrets(t)
	if _, err := mcpEnv("x", map[string]string{"KEY": "${HARN_PROVIDER_KEY}"}); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "HARN_PROVIDER_KEY") {
		t.Fatalf("env naming HARN_PROVIDER_KEY: %v", err)
	}
	s := MCPServer{Name: "web", Type: "http", URL: "https://mcp.example/", BearerTokenEnv: "HARN_PROVIDER_KEY"}
	if err := s.validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "bearer_token_env") {
		t.Fatalf("bearer_token_env naming HARN_PROVIDER_KEY: %v", err)
	}
	s.BearerTokenEnv = "GITHUB_TOKEN"
	if err := s.validate(); err != nil {
		t.Fatalf("a server's own token env: %v", err)
	}
}
