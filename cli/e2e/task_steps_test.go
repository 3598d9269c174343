package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
)

type stepJSON struct {
	Seq          int    `json:"seq"`
	Kind         string `json:"kind"`
	Name         string `json:"name"`
	Call         string `json:"call"`
	Outcome      string `json:"outcome"`
	Input        int    `json:"input_tokens"`
	Output       int    `json:"output_tokens"`
	Estimated    int    `json:"estimated_input"`
	InputDigest  string `json:"input_digest"`
	OutputDigest string `json:"output_digest"`
}

// TestTaskShowListsTheStepsOfAnAsk: after a `harn ask` that reads a file,
// tries a tool outside its grants (with a name full of terminal escapes)
// and answers, `harn task show` lists the turn's steps in ledger order:
// three model calls with the scripted usage, the read (ok) and the
// refusal, each with keyed digests; the human view holds no escapes.
func TestTaskShowListsTheStepsOfAnAsk(t *testing.T) {
	e := askEnv(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello"), 0o600)
	evil := `sh\u001b[2J\u0007ell`
	m := modeltest.New(t,
		modeltest.Calls(true, modeltest.Call{ID: "c1", Name: "read", Args: `{"path":"a.txt"}`}),
		modeltest.Calls(true, modeltest.Call{ID: "c2", Name: evil, Args: `{"command":"true"}`}),
		modeltest.Text("it says hello"))
	ch, _ := askJSONIn(t, e, dir, modelArgs(m, "--grants", grantsFile(t, "execute read\n"), "read it"))
	end := waitFor(t, ch, "turn.end")
	task, _ := end["task"].(string)
	if task == "" || end["status"] != "succeeded" {
		t.Fatalf("turn.end %v", end)
	}

	var show struct {
		Steps []stepJSON `json:"steps"`
	}
	mustJSON(t, e.ok("task", "show", task, "--json"), &show)
	var kinds []string
	for _, s := range show.Steps {
		kinds = append(kinds, s.Kind)
	}
	if got := strings.Join(kinds, " "); got != "model tool model refused model" {
		t.Fatalf("step kinds %q, want model tool model refused model: %+v", got, show.Steps)
	}
	for i, s := range show.Steps {
		if i > 0 && s.Seq <= show.Steps[i-1].Seq {
			t.Fatalf("steps out of order: %+v", show.Steps)
		}
		if len(s.InputDigest) != 32 {
			t.Fatalf("step %d has no input digest: %+v", i, s)
		}
	}
	for i, want := range [][2]int{{30, 10}, {30, 10}, {20, 5}} {
		s := show.Steps[[]int{0, 2, 4}[i]]
		if s.Name != "test-model" || s.Input != want[0] || s.Output != want[1] || s.Estimated == 0 || len(s.OutputDigest) != 32 {
			t.Fatalf("model step %d: %+v, want %v", i, s, want)
		}
	}
	if r := show.Steps[1]; r.Name != "read" || r.Call != "c1" || r.Outcome != "succeeded" || len(r.OutputDigest) != 32 {
		t.Fatalf("read step %+v", r)
	}
	if r := show.Steps[3]; !strings.Contains(r.Name, "sh") || r.Call != "c2" || r.Outcome == "" {
		t.Fatalf("refused step %+v", r)
	}

	human := e.ok("task", "show", task)
	if strings.ContainsAny(human, "\x1b\x07") {
		t.Fatalf("task show prints control characters: %q", human)
	}
	for _, want := range []string{"steps: 5", "model   test-model  in 30 out 10", "tool    read  succeeded  call c1", "refused ", "in 20 out 5",
		"in:" + show.Steps[1].InputDigest[:12]} {
		if !strings.Contains(human, want) {
			t.Fatalf("task show lacks %q:\n%s", want, human)
		}
	}
}
