package node

import (
	"github.com/harn-dev/harn/node/metrics"
	"github.com/harn-dev/harn/node/spool"
	"github.com/harn-dev/harn/presence"
)

// metricsSource is what /metrics reads at scrape time.
type metricsSource struct{ n *Node }

func (m metricsSource) SpoolDepth() int {
	files, err := spool.Pending(SpoolDir(m.n.cfg.DataDir))
	if err != nil {
		return 0
	}
	return len(files)
}

func (m metricsSource) Sessions() []metrics.SessionCount {
	type key struct{ a, l string }
	counts := map[key]int{}
	m.n.sess.EachLive(func(st *presence.State, _ string) {
		counts[key{string(st.Activity), string(st.TaskState)}]++
	})
	out := make([]metrics.SessionCount, 0, len(counts))
	for k, c := range counts {
		out = append(out, metrics.SessionCount{Activity: k.a, Lifecycle: k.l, N: c})
	}
	return out
}

func (m metricsSource) Mesh() (metrics.Mesh, bool) {
	c := m.n.cl
	if c == nil {
		return metrics.Mesh{}, false
	}
	out := metrics.Mesh{Members: map[string]int{}}
	for _, mb := range c.Members() {
		out.Members[string(mb.Status)]++
	}
	st := c.RaftStats()
	out.RaftState, out.Term, out.CommitIndex, out.AppliedIndex = st.State, st.Term, st.CommitIndex, st.AppliedIndex
	out.LastContact = st.Read.LastContact
	return out, true
}
