// Package testsupport holds what the module's tests share across packages
// and that must not reach a production package's imports: the porcupine
// model of the session registry (raftstore's linearizability test and
// deploy/partition's Docker partition test), and the browser tests'
// Chromium lookup (node/board and cli/e2e). Only test files import it.
package testsupport

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// RegInput is one operation on a session's lifecycle register: a write of
// version Seq, or a read (Write false).
type RegInput struct {
	Key   string
	Write bool
	Seq   int64
}

// RegOutput is what a read saw: the version Seq (0 when nothing was
// written), and where it was read (Node, Source), for the report only.
// A write's output is the zero RegOutput.
type RegOutput struct {
	Seq    int64
	Node   string
	Source string
}

// RegisterModel is the registry's lifecycle group as a sequential object: a
// last-writer-wins register per session, where the write with the larger
// ts wins. Every write carries a fresh, growing Seq and a later event time
// than the one before, so a read must return the largest Seq among the
// writes linearized before it. Operations are partitioned by session.
var RegisterModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(RegInput).Key
			if _, ok := by[k]; !ok {
				keys = append(keys, k)
			}
			by[k] = append(by[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, by[k])
		}
		return out
	},
	Init: func() any { return int64(0) },
	Step: func(state, input, output any) (bool, any) {
		st, in := state.(int64), input.(RegInput)
		if in.Write {
			return true, max(st, in.Seq)
		}
		return output.(RegOutput).Seq == st, st
	},
	DescribeOperation: func(input, output any) string {
		in := input.(RegInput)
		if in.Write {
			return fmt.Sprintf("write(%s, v%d)", in.Key, in.Seq)
		}
		o := output.(RegOutput)
		if o.Node == "" && o.Source == "" {
			return fmt.Sprintf("read(%s) -> v%d", in.Key, o.Seq)
		}
		return fmt.Sprintf("read(%s) on %s -> v%d (%s)", in.Key, o.Node, o.Seq, o.Source)
	},
}
