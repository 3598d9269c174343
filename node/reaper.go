package node

import (
	"time"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/procinfo"
)

// ReasonProcessGone is the session.end reason when the agent's process is
// gone without a hook saying so (an interrupt or a crash).
const ReasonProcessGone = "process_gone"

// systemProcs checks processes through /proc.
type systemProcs struct{}

func (systemProcs) Alive(pid int, start uint64) bool {
	return procinfo.Alive(procinfo.Proc{PID: pid, Start: start})
}

func (n *Node) reapLoop() { n.every(n.cfg.ReapInterval, func() { n.Reap() }) }

// every runs fn every d until the node stops.
func (n *Node) every(d time.Duration, fn func()) {
	t := n.cfg.Clock.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C():
			fn()
		}
	}
}

// Reap ends, with an explicit session.end (reason process_gone), every live
// session whose recorded agent process no longer exists.
func (n *Node) Reap() int {
	type proc struct {
		pid   int
		start uint64
	}
	alive := map[proc]bool{}
	var ends []presence.Event
	now := n.cfg.Clock.Now()
	for _, s := range n.sess.Live() {
		if s.AgentPID <= 0 {
			continue
		}
		p := proc{s.AgentPID, s.AgentPIDStart}
		a, ok := alive[p]
		if !ok {
			a = n.procs.Alive(p.pid, p.start)
			alive[p] = a
		}
		if a {
			continue
		}
		ts := now
		if !ts.After(s.LastEventAt) {
			ts = s.LastEventAt.Add(time.Millisecond)
		}
		ends = append(ends, presence.Event{SessionID: s.SessionID, ParentSessionID: s.ParentSessionID,
			Type: presence.TypeSessionEnd, TS: ts, Agent: s.Agent,
			Attrs: map[string]any{presence.AttrReason: ReasonProcessGone}})
	}
	if len(ends) == 0 {
		return 0
	}
	if _, err := n.Ingest(ends); err != nil {
		n.log.Error("reap", "err", err)
		return 0
	}
	for _, e := range ends {
		n.log.Info("session ended: agent process gone", "session", e.SessionID)
	}
	return len(ends)
}
