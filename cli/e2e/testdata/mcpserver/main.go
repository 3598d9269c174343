// Command mcpserver is the stdio MCP server the e2e tests give harn ask
// with --mcp: echo, and bump, which changes echo's schema (a new required
// property) and so sends notifications/tools/list_changed. With --pid FILE
// it writes its process id there first, so that a test can check that it
// is gone once its session has ended.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type echo2In struct {
	Text  string `json:"text" jsonschema:"the text to echo"`
	Times int    `json:"times" jsonschema:"how many times"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func main() {
	pid := flag.String("pid", "", "write the process id to this file")
	flag.Parse()
	if *pid != "" {
		if err := os.WriteFile(*pid, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, "mcpserver:", err)
			os.Exit(2)
		}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "e2e-demo", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo a text back (the demo server's tool)."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return text("echo: " + in.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "bump", Description: "Change the echo tool's schema."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo a text back, several times."},
				func(_ context.Context, _ *mcp.CallToolRequest, in echo2In) (*mcp.CallToolResult, any, error) {
					return text("echo2: " + in.Text), nil, nil
				})
			return text("bumped"), nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcpserver:", err)
	}
}
