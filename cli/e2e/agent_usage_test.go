package e2e

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
)

type usageRowJSON struct {
	Key       string   `json:"key"`
	Model     string   `json:"model"`
	Node      string   `json:"node"`
	Calls     int      `json:"calls"`
	Estimated int      `json:"estimated_input"`
	Input     int      `json:"input"`
	Output    int      `json:"output"`
	Cost      *float64 `json:"cost_usd"`
}

func (e *env) usage(args ...string) []usageRowJSON {
	e.t.Helper()
	var rows []usageRowJSON
	mustJSON(e.t, e.ok(append([]string{"usage", "--json"}, args...)...), &rows)
	return rows
}

// TestUsageSumsTheScriptedUsageOfTwoAsks: after two `harn ask` runs,
// `harn usage` totals equal the sums of the usage chunks the model
// server sent; --by groups, --since filters, --prices costs.
func TestUsageSumsTheScriptedUsageOfTwoAsks(t *testing.T) {
	e := askEnv(t)
	f := filepath.Join(t.TempDir(), "a.txt")
	os.WriteFile(f, []byte("hello"), 0o600)
	// Ask 1: a tool call (usage 30 in, 10 out), then an answer (20, 5).
	// Ask 2: an answer (20, 5).
	m := modeltest.New(t,
		modeltest.Calls(true, modeltest.Call{ID: "c1", Name: "read", Args: `{"path":"` + f + `"}`}),
		modeltest.Text("it says hello"),
		modeltest.Text("second answer"))
	env := append(e.hookEnv(), "HARN_PROVIDER_KEY=k")
	if r := run(t, env, "", modelArgs(m, "--grants", grantsFile(t, "execute read\n"), "read it")...); r.code != 0 {
		t.Fatalf("%v", r)
	}
	first := harnSession(t, e)
	// Wait for the wall clock's next whole second but one, so that
	// --since can name a time between the two asks (it has second
	// precision).
	boundary := time.Now().Truncate(time.Second).Add(2 * time.Second)
	for i := 0; i < 100 && time.Now().Before(boundary); i++ {
		time.Sleep(time.Until(boundary) + time.Millisecond)
	}
	if r := run(t, env, "", modelArgs(m, "second")...); r.code != 0 || strings.TrimSpace(r.stdout) != "second answer" {
		t.Fatalf("%v", r)
	}

	bySession := e.usage("--by", "session")
	if len(bySession) != 2 {
		t.Fatalf("by session %+v", bySession)
	}
	for _, r := range bySession {
		want := [3]int{1, 20, 5}
		if r.Key == first {
			want = [3]int{2, 50, 15}
		}
		if got := [3]int{r.Calls, r.Input, r.Output}; got != want || r.Model != "test-model" || r.Estimated == 0 || r.Node == "" {
			t.Fatalf("session %s: %+v, want calls/input/output %v", r.Key, r, want)
		}
	}
	byAgent := e.usage("--by", "agent")
	if len(byAgent) != 1 || byAgent[0].Key != "harn" || byAgent[0].Calls != 3 || byAgent[0].Input != 70 || byAgent[0].Output != 20 {
		t.Fatalf("by agent %+v", byAgent)
	}
	byNode := e.usage("--by", "node")
	if len(byNode) != 1 || byNode[0].Key != byNode[0].Node || byNode[0].Calls != 3 {
		t.Fatalf("by node %+v", byNode)
	}
	since := time.Since(boundary) + 500*time.Millisecond
	recent := e.usage("--by", "session", "--since", strconv.FormatInt(since.Milliseconds(), 10)+"ms")
	if len(recent) != 1 || recent[0].Key == first || recent[0].Calls != 1 || recent[0].Input != 20 {
		t.Fatalf("since %v: %+v", since, recent)
	}

	prices := filepath.Join(t.TempDir(), "prices.json")
	os.WriteFile(prices, []byte(`{"test-model": {"input": 2, "output": 10}, "other": {"input": 1, "output": 1}}`), 0o600)
	costed := e.usage("--by", "agent", "--prices", prices)
	if want := (70*2.0 + 20*10.0) / 1e6; len(costed) != 1 || costed[0].Cost == nil || math.Abs(*costed[0].Cost-want) > 1e-12 {
		t.Fatalf("cost %+v, want %g", costed, want)
	}
	table := e.ok("usage", "--by", "agent", "--prices", prices)
	if !strings.Contains(table, "harn") || !strings.Contains(table, "0.0003") {
		t.Fatalf("table:\n%s", table)
	}
	if r := e.harn("", "usage", "--by", "model"); r.code == 0 {
		t.Fatalf("--by model accepted: %v", r)
	}
}
