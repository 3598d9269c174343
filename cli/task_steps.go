package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/harn-dev/harn/node/tasks/taskwire"
	"github.com/harn-dev/harn/util/text"
)

// shortDigest is how many hex digits of a keyed digest the human view of
// `harn task show` prints (--json has them all).
const shortDigest = 12

// writeSteps prints a task's steps, one a line, in ledger order: model
// calls with their tokens, tool calls with their outcome, refusals,
// confirmations, denials, grant reductions, cancellations and acks. Every
// string from the ledger passes util/text first: model and tool names and
// reasons may come from an agent.
func writeSteps(w io.Writer, steps []taskwire.Step, omitted int) {
	if len(steps) == 0 {
		return
	}
	fmt.Fprintf(w, "steps: %d\n", len(steps)+omitted)
	if omitted > 0 {
		fmt.Fprintf(w, "  … %d earlier steps left out\n", omitted)
	}
	for _, s := range steps {
		fmt.Fprintln(w, stepLine(s))
	}
}

// stepLine is one step for people.
func stepLine(s taskwire.Step) string {
	clean := func(v string) string { return text.Clip(text.OneLine(v), 200) }
	var b strings.Builder
	fmt.Fprintf(&b, "  %4d  %-7s ", s.Seq, s.Kind)
	switch s.Kind {
	case taskwire.StepModel:
		fmt.Fprintf(&b, "%s  in %d out %d (estimated %d)", dash(clean(s.Name)), s.Input, s.Output, s.Estimated)
		if s.Outcome != "" {
			b.WriteString("  failed: " + clean(s.Outcome))
		}
	case taskwire.StepTool, taskwire.StepRefused:
		fmt.Fprintf(&b, "%s  %s", dash(clean(s.Name)), dash(clean(s.Outcome)))
	case taskwire.StepReduce:
		fmt.Fprintf(&b, "%s to %s", dash(clean(s.Name)), dash(clean(s.Level)))
	case taskwire.StepCancel:
		b.WriteString(dash(clean(s.Outcome)))
	case taskwire.StepConfirm, taskwire.StepDeny:
		b.WriteString(dash(clean(s.Name)))
	}
	if s.Call != "" {
		b.WriteString("  call " + clean(s.Call))
	}
	if s.By != "" {
		b.WriteString("  by " + clean(s.By))
	}
	if s.Reason != "" {
		b.WriteString(": " + clean(s.Reason))
	}
	if d := digestPair(s.InputDigest, s.OutputDigest); d != "" {
		b.WriteString("  " + d)
	}
	return strings.TrimRight(b.String(), " ")
}

// digestPair is "in:… out:…" with the short digests that are set.
func digestPair(in, out string) string {
	short := func(d string) string { return text.Sanitize(d[:min(len(d), shortDigest)]) }
	var parts []string
	if in != "" {
		parts = append(parts, "in:"+short(in))
	}
	if out != "" {
		parts = append(parts, "out:"+short(out))
	}
	return strings.Join(parts, " ")
}
