package tasks

import (
	"github.com/harn-dev/harn/node/tasks/taskwire"
	"github.com/harn-dev/harn/runtime"
)

// Steps reads a task's steps from its ledger records, in order: a model
// call per model.call record; a tool call per call (its begin, settled by
// its end); refusals, confirmations, denials, grant reductions,
// cancellations and acknowledgements. Task and state records are not
// steps. Over taskwire.MaxSteps, the last ones are kept and omitted counts
// the rest.
func Steps(recs []runtime.Record) (steps []taskwire.Step, omitted int) {
	byCall := map[string]int{} // a call id: its tool step's index
	for _, r := range recs {
		s := taskwire.Step{Seq: r.Seq, At: r.TS, Call: r.Call, By: r.By, Reason: r.Reason}
		switch r.Kind {
		case runtime.RecModel:
			s.Kind, s.Name, s.InputDigest, s.OutputDigest = taskwire.StepModel, r.Capability, r.Input, r.Output
			if u := r.Usage; u != nil {
				s.Estimated, s.Input, s.Output, s.Outcome = u.Estimated, u.Input, u.Output, u.Error
			}
		case runtime.RecBegin:
			s.Kind, s.Name, s.InputDigest, s.Outcome = taskwire.StepTool, r.Capability, r.Input, "running"
			if r.Status != "" {
				s.Outcome = r.Status // pending: it waits for a confirmation
			}
			if r.Call != "" {
				byCall[r.Call] = len(steps)
			}
		case runtime.RecEnd:
			if i, ok := byCall[r.Call]; ok && r.Call != "" {
				steps[i].Outcome, steps[i].OutputDigest = r.Status, r.Output
				if r.Reason != "" { // settled by a restart: node_restart
					steps[i].Reason = r.Reason
				}
				continue
			}
			s.Kind, s.Name, s.Outcome, s.OutputDigest = taskwire.StepTool, r.Capability, r.Status, r.Output
		case runtime.RecRefused:
			s.Kind, s.Name, s.Outcome, s.InputDigest = taskwire.StepRefused, r.Capability, r.Status, r.Input
		case runtime.RecConfirm:
			s.Kind, s.Name = taskwire.StepConfirm, r.Capability
			if i, ok := byCall[r.Call]; ok && steps[i].Outcome == "pending" {
				steps[i].Outcome = "running"
			}
		case runtime.RecDeny:
			s.Kind, s.Name = taskwire.StepDeny, r.Capability
		case runtime.RecReduce:
			s.Kind, s.Name, s.Level = taskwire.StepReduce, r.Capability, r.Level
		case runtime.RecCancel:
			s.Kind, s.Outcome = taskwire.StepCancel, r.Status
		case runtime.RecAck:
			s.Kind = taskwire.StepAck
		default:
			continue
		}
		steps = append(steps, s)
	}
	if n := len(steps) - taskwire.MaxSteps; n > 0 {
		return steps[n:], n
	}
	return steps, 0
}

// steps is the task's steps from the node's ledger.
func (h *Host) steps(task string) ([]taskwire.Step, int, error) {
	recs, err := NewLedger(h.cfg.KV).Records(task)
	if err != nil {
		return nil, 0, err
	}
	s, n := Steps(recs)
	return s, n, nil
}
