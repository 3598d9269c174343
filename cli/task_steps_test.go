package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/node/tasks/taskwire"
)

func TestWriteStepsFormatsEachKindAndStripsControlCharacters(t *testing.T) {
	at := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	d1, d2 := strings.Repeat("ab", 16), strings.Repeat("cd", 16)
	steps := []taskwire.Step{
		{Seq: 3, At: at, Kind: taskwire.StepModel, Name: "gpt\x1b[31m-x", Estimated: 118, Input: 120, Output: 30, InputDigest: d1, OutputDigest: d2},
		{Seq: 4, At: at, Kind: taskwire.StepTool, Name: "read", Call: "c1", Outcome: "succeeded", InputDigest: d1, OutputDigest: d2},
		{Seq: 6, At: at, Kind: taskwire.StepRefused, Name: "sh\aell", Call: "c2", Outcome: "grant", InputDigest: d1},
		{Seq: 7, At: at, Kind: taskwire.StepReduce, Name: "shell", Level: "none", By: "alice", Reason: "too\nwild"},
		{Seq: 8, At: at, Kind: taskwire.StepModel, Name: "gpt-x", Estimated: 10, Outcome: "rate_limited"},
		{Seq: 9, At: at, Kind: taskwire.StepCancel, Outcome: "cancelled", By: "bob"},
	}
	var b strings.Builder
	writeSteps(&b, steps, 2)
	want := strings.Join([]string{
		"steps: 8",
		"  … 2 earlier steps left out",
		"     3  model   gpt[31m-x  in 120 out 30 (estimated 118)  in:abababababab out:cdcdcdcdcdcd",
		"     4  tool    read  succeeded  call c1  in:abababababab out:cdcdcdcdcdcd",
		"     6  refused shell  grant  call c2  in:abababababab",
		"     7  reduce  shell to none  by alice: too wild",
		"     8  model   gpt-x  in 0 out 0 (estimated 10)  failed: rate_limited",
		"     9  cancel  cancelled  by bob",
		"",
	}, "\n")
	if got := b.String(); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if strings.ContainsAny(b.String(), "\x1b\a") {
		t.Fatal("control characters reached the terminal")
	}
	b.Reset()
	writeSteps(&b, nil, 0)
	if b.Len() != 0 {
		t.Fatalf("no steps printed %q", b.String())
	}
}
