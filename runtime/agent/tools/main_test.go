package tools

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The test binary doubles as a stdio MCP server: run again with
// HARN_TOOLS_TEST_MCP=1 it serves testServer on stdin/stdout.
func TestMain(m *testing.M) {
	if os.Getenv("HARN_TOOLS_TEST_MCP") == "1" {
		s := testServer()
		_ = s.Run(context.Background(), &mcp.StdioTransport{})
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type echoIn struct {
	Text string `json:"text"`
}

// testServer offers echo and bump; bump changes echo's schema (a new
// required property), which sends notifications/tools/list_changed.
func testServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	echo := func(ctx context.Context, r *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo a text back."}, echo)
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "Answer with a lot of text."},
		func(ctx context.Context, r *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			b := make([]byte, 1<<20)
			for i := range b {
				b[i] = 'x'
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Answer only when cancelled (or after 30 s)."},
		func(ctx context.Context, r *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			select {
			case <-ctx.Done():
			case <-time.After(30 * time.Second):
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "late"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "bump", Description: "Change echo's schema."},
		func(ctx context.Context, r *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			type echo2 struct {
				Text  string `json:"text"`
				Times int    `json:"times"`
			}
			mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo a text back, several times."},
				func(ctx context.Context, r *mcp.CallToolRequest, in echo2) (*mcp.CallToolResult, any, error) {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo2: " + in.Text}}}, nil, nil
				})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "bumped"}}}, nil, nil
		})
	return s
}
