package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
)

// TestAskWithTheAnthropicProvider: `harn ask --provider anthropic` runs a
// tool_use round trip against a scripted Messages server, marks the
// stable prefix for caching, and the ledger keeps the usage the stream
// reported, cache tokens included.
func TestAskWithTheAnthropicProvider(t *testing.T) {
	e := askEnv(t)
	// The read tool is confined to the session's directory: ask runs there.
	dir := t.TempDir()
	f := "hello.txt"
	os.WriteFile(filepath.Join(dir, f), []byte("the secret word is heron"), 0o600)
	m := modeltest.NewAnthropic(t,
		modeltest.AToolUse("reading", modeltest.AUsage{Input: 30, Output: 9, CacheWrite: 200},
			modeltest.Call{ID: "toolu_1", Name: "read", Args: `{"path":"` + f + `"}`}),
		modeltest.AText("it says heron", modeltest.AUsage{Input: 50, Output: 5, CacheRead: 200}))
	r := runIn(t, append(e.hookEnv(), "HARN_PROVIDER_KEY=sk-test"), dir,
		append(modelArgs(m, "--provider", "anthropic", "--grants", grantsFile(t, "execute read\n")), "the file?")...)
	if r.code != 0 || strings.TrimSpace(r.stdout) != "it says heron" {
		t.Fatalf("%v", r)
	}
	raw := m.Raw()
	if len(raw) != 2 {
		t.Fatalf("%d requests", len(raw))
	}
	for i, b := range raw {
		if strings.Count(b, `"cache_control":{"type":"ephemeral"}`) != 1 {
			t.Fatalf("request %d has no single cache breakpoint: %s", i, b)
		}
	}
	if !strings.Contains(raw[1], `"tool_result"`) || !strings.Contains(raw[1], `"tool_use_id":"toolu_1"`) || !strings.Contains(raw[1], "the secret word is heron") {
		t.Fatalf("the tool result did not reach the model: %s", raw[1])
	}
	rows := e.usage("--by", "agent")
	if len(rows) != 1 || rows[0].Calls != 2 || rows[0].Input != 230+250 || rows[0].Output != 14 {
		t.Fatalf("usage %+v", rows)
	}
}
