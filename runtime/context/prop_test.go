package context

import (
	stdctx "context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/harn-dev/harn/runtime/agent"
	"github.com/harn-dev/harn/runtime/agent/tools"
)

// scriptedModel is the property's model: each step it asks for one tool
// call whose output size the property draws; a condensing model answers
// by its mode.
type scriptedModel struct {
	mode  string
	calls int
}

func (m *scriptedModel) Condense(_ stdctx.Context, in CondenseInput) (string, error) {
	m.calls++
	switch m.mode {
	case "invalid-once":
		if m.calls%2 == 1 {
			return badSummary(in)
		}
	case "invalid-twice":
		return badSummary(in)
	case "unavailable":
		return unavailable(in)
	}
	return goodSummary(in)
}

// TestPropertyWorkingSetWithinBudget runs 200 tool exchanges of random
// sizes on a 4k-token window and checks after every step: no request over
// the usable budget, every pin and the instructions present, every
// archived output recallable byte for byte, the history whole.
func TestPropertyWorkingSetWithinBudget(t *testing.T) {
	if f := flag.Lookup("rapid.checks"); f != nil && f.Value.String() == "100" {
		_ = f.Value.Set("12") // each case is 200 steps
		defer func() { _ = f.Value.Set("100") }()
	}
	model, err := agent.ModelFor("scripted", 4096, 512)
	if err != nil {
		t.Fatal(err)
	}
	specs := append(append(tools.CoreSpecs(), tools.DiscoverySpecs()...), RecallSpec())
	base := agent.Estimate(agent.Request{System: []string{agent.SystemPrompt}, Tools: specs})
	budget := model.UsableInput() - base
	rapid.Check(t, func(rt *rapid.T) {
		mode := rapid.SampledFrom([]string{"off", "llm", "invalid-once", "invalid-twice", "unavailable"}).Draw(rt, "mode")
		work := t.TempDir()
		if err := os.WriteFile(filepath.Join(work, "AGENTS.md"), []byte("Always run the tests."), 0o600); err != nil {
			rt.Fatal(err)
		}
		sm := &scriptedModel{mode: mode}
		var compactions []Compaction
		sp := NewSpace(openPebble(t, ""), Options{Compaction: mode != "off", Condenser: sm, PreviewBytes: 1024,
			OnCompact: func(c Compaction) { compactions = append(compactions, c) }})
		l, err := sp.Open("s1", work)
		if err != nil {
			rt.Fatal(err)
		}
		appended := 0
		add := func(ms ...agent.Message) {
			if err := l.Append(ms...); err != nil {
				rt.Fatal(err)
			}
			appended += len(ms)
		}
		var pins []string
		pin := func(s string) {
			if err := l.Pin(user("t1", s)); err != nil {
				rt.Fatal(err)
			}
			appended++
			h := l.Report().Items
			pins = append(pins, fmt.Sprintf("%x", h[len(h)-1].Seq)+"\x00"+s)
		}
		add(user("t1", "work through the files"))
		pin("keep the public API stable")
		outputs := map[string]string{}
		for step := 0; step < 200; step++ {
			ms, err := l.WorkingSet(stdctx.Background(), "t1", budget)
			if err != nil {
				rt.Fatal(err)
			}
			if n := viewTokens(ms); n > budget {
				rt.Fatalf("step %d (%s): request of %d tokens over the usable budget %d", step, mode, n, budget)
			}
			view := mustJSON(t, ms)
			if !strings.Contains(ms[0].Text, "Always run the tests.") {
				rt.Fatalf("step %d: the instructions are not first: %q", step, ms[0].Text)
			}
			for _, p := range pins {
				seq, s, _ := strings.Cut(p, "\x00")
				if !strings.Contains(view, s) && !strings.Contains(view, "[pin:"+seq+"]") {
					rt.Fatalf("step %d: pin %q lost", step, s)
				}
			}
			switch rapid.IntRange(0, 19).Draw(rt, "event") {
			case 0:
				add(user("t1", "steer: also check the docs"))
			case 1:
				pin(fmt.Sprintf("pinned fact %d", step))
			}
			id := fmt.Sprintf("c%d", step)
			size := rapid.IntRange(0, 12_000).Draw(rt, "size")
			out := filler(size, step)
			add(call("t1", id, "read", fmt.Sprintf(`{"path":"f%d"}`, step)), result("t1", id, out))
			rep := l.Report().Items
			outputs[rep[len(rep)-1].Ref] = out
			if step%25 == 24 || step == 199 {
				for ref, want := range outputs {
					got, _, err := l.Recall(ref, 0, -1)
					if err != nil || string(got) != want {
						rt.Fatalf("step %d: %s not recalled byte for byte: %v", step, ref, err)
					}
				}
				if n := len(l.History()); n != appended {
					rt.Fatalf("step %d: history holds %d messages of %d", step, n, appended)
				}
			}
		}
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
