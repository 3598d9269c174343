package node

import (
	"fmt"
	"time"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/presence/adapter/all"
	"github.com/harn-dev/harn/util/ids"
	"github.com/harn-dev/harn/util/procinfo"
)

// Populate ingests sessions live sessions of three events each
// (session.start with a name-worthy cwd, a prompt, a tool.pre_use), 100
// sessions per Ingest call, with this process as their agent, an hour old.
// It is exported for the node's and the CLI's benchmarks, which fill a node
// with 10,000 sessions the same way.
func Populate(n *Node, sessions int) error {
	self, err := procinfo.Self()
	if err != nil {
		return err
	}
	t0 := time.Now().Add(-time.Hour)
	agent := all.Installable()[0] // sessions of a real agent, whichever
	const perBatch = 100
	for s0 := 0; s0 < sessions; s0 += perBatch {
		evs := make([]presence.Event, 0, 3*perBatch)
		for s := s0; s < min(s0+perBatch, sessions); s++ {
			sid := fmt.Sprintf("%08x-5b7d-4e21-9c3a-0d6e2f4b1a77", s)
			ts := t0.Add(time.Duration(s) * time.Millisecond)
			add := func(typ, native string, dt time.Duration, attrs map[string]any) {
				e := presence.Event{ID: ids.New(ts.Add(dt)), SessionID: sid, Type: typ, TS: ts.Add(dt), Agent: agent}
				e.SetAttr("native", native)
				e.SetAttr(presence.AttrCwd, fmt.Sprintf("/home/ana/proj%d", s%50))
				e.SetAttr(presence.AttrAgentPID, self.PID)
				e.SetAttr(presence.AttrAgentStart, self.Start)
				for k, v := range attrs {
					e.SetAttr(k, v)
				}
				evs = append(evs, e)
			}
			add(presence.TypeSessionStart, "SessionStart", 0, map[string]any{presence.AttrSource: "startup"})
			add(presence.TypeUserPromptSubmit, "UserPromptSubmit", time.Second, nil)
			add(presence.TypeToolPreUse, "PreToolUse", 2*time.Second, map[string]any{presence.AttrTool: "Bash"})
		}
		if _, err := n.Ingest(evs); err != nil {
			return fmt.Errorf("node: populate sessions %d..: %w", s0, err)
		}
	}
	return nil
}
