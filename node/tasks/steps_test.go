package tasks

import (
	"testing"
	"time"

	"github.com/harn-dev/harn/node/tasks/taskwire"
	"github.com/harn-dev/harn/runtime"
)

func TestStepsMergesACallsBeginAndEndAndKeepsTheLast(t *testing.T) {
	at := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	recs := []runtime.Record{
		{Seq: 1, TS: at, Kind: runtime.RecSubmit},
		{Seq: 2, TS: at, Kind: runtime.RecState, State: runtime.StateRunning},
		{Seq: 3, TS: at, Kind: runtime.RecModel, Capability: "m", Usage: &runtime.Usage{Estimated: 9, Input: 10, Output: 2}, Input: "i1", Output: "o1"},
		{Seq: 4, TS: at, Kind: runtime.RecBegin, Call: "c1", Capability: "shell", Status: "pending", Input: "i2"},
		{Seq: 5, TS: at, Kind: runtime.RecConfirm, Call: "c1", Capability: "shell", By: "op"},
		{Seq: 6, TS: at, Kind: runtime.RecReduce, Capability: "shell", Level: "none", By: "op", Reason: "r"},
		{Seq: 7, TS: at, Kind: runtime.RecCancel, Status: "cancelled", By: "op"},
		{Seq: 8, TS: at, Kind: runtime.RecEnd, Call: "c1", Capability: "shell", Status: "aborted", Output: "o2"},
		{Seq: 9, TS: at, Kind: runtime.RecState, State: runtime.StateTerminal},
	}
	steps, omitted := Steps(recs)
	if omitted != 0 || len(steps) != 5 {
		t.Fatalf("%d omitted, steps %+v", omitted, steps)
	}
	want := []taskwire.Step{
		{Seq: 3, At: at, Kind: taskwire.StepModel, Name: "m", Estimated: 9, Input: 10, Output: 2, InputDigest: "i1", OutputDigest: "o1"},
		{Seq: 4, At: at, Kind: taskwire.StepTool, Name: "shell", Call: "c1", Outcome: "aborted", InputDigest: "i2", OutputDigest: "o2"},
		{Seq: 5, At: at, Kind: taskwire.StepConfirm, Name: "shell", Call: "c1", By: "op"},
		{Seq: 6, At: at, Kind: taskwire.StepReduce, Name: "shell", Level: "none", By: "op", Reason: "r"},
		{Seq: 7, At: at, Kind: taskwire.StepCancel, Outcome: "cancelled", By: "op"},
	}
	for i := range want {
		if steps[i] != want[i] {
			t.Fatalf("step %d: %+v, want %+v", i, steps[i], want[i])
		}
	}

	many := make([]runtime.Record, 0, taskwire.MaxSteps+5)
	for i := 0; i < taskwire.MaxSteps+5; i++ {
		many = append(many, runtime.Record{Seq: uint64(i + 1), TS: at, Kind: runtime.RecAck})
	}
	steps, omitted = Steps(many)
	if omitted != 5 || len(steps) != taskwire.MaxSteps || steps[0].Seq != 6 {
		t.Fatalf("over the bound: %d omitted, %d steps from %d", omitted, len(steps), steps[0].Seq)
	}
}
