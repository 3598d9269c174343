// Package metrics is the node's room for Prometheus metrics: the
// collectors, their registry, and the /metrics handler the web board's
// listener serves. The ingest path counts through Ingested and
// ObserveIngest, which cost a map lookup under a read lock and an atomic
// add (no allocation once a label pair has been seen); everything else
// (the spool depth, the sessions by activity and lifecycle, the mesh's
// gossip and raft health) is read from the Source at scrape time, so it
// costs nothing between scrapes.
package metrics

import (
	"net/http"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Source is what the metrics read at scrape time; the node implements it.
type Source interface {
	// SpoolDepth is the number of records the hooks spooled that the node
	// has not ingested yet.
	SpoolDepth() int
	// Sessions counts this node's live sessions by activity and lifecycle.
	Sessions() []SessionCount
	// Mesh is the mesh's health; ok is false when the node runs without
	// the mesh.
	Mesh() (m Mesh, ok bool)
}

// SessionCount is the number of live sessions with one activity and
// lifecycle.
type SessionCount struct {
	Activity, Lifecycle string
	N                   int
}

// Mesh is the gossip and raft health at one instant.
type Mesh struct {
	// Members counts the gossip members by state (alive, suspect, dead,
	// left).
	Members map[string]int
	// RaftState is Leader, Follower, Candidate or Shutdown.
	RaftState string
	// LastContact is the time since the leader was last heard from (0 on
	// the leader; negative when never).
	LastContact time.Duration
	Term        uint64
	CommitIndex uint64
	// AppliedIndex is the index the local registry replica reflects.
	AppliedIndex uint64
}

// Metric names.
const (
	NameEventsIngested = "harn_events_ingested_total"
	NameIngestSeconds  = "harn_ingest_duration_seconds"
	NameSpoolDepth     = "harn_spool_depth"
	NameSessions       = "harn_sessions"
	NameMeshMembers    = "harn_mesh_members"
	NameRaftState      = "harn_raft_state"
	NameRaftContact    = "harn_raft_last_contact_seconds"
	NameRaftTerm       = "harn_raft_term"
	NameRaftCommit     = "harn_raft_commit_index"
	NameRaftApplied    = "harn_raft_applied_index"
)

// maxSeries bounds the (agent, type) pairs of the ingest counter; pairs
// past it are counted as other/other.
const maxSeries = 512

// maxLabel bounds a label value.
const maxLabel = 64

// Other is the label value of what is not shown as itself.
const Other = "other"

// RaftStates are the raft states harn_raft_state reports, one of them 1.
var RaftStates = []string{"Leader", "Follower", "Candidate", "Shutdown"}

// MemberStates are the states harn_mesh_members reports (each present,
// 0 when no member is in it).
var MemberStates = []string{"alive", "suspect", "dead", "left"}

type pair struct{ agent, typ string }

// Metrics holds the node's collectors. Make it with New.
type Metrics struct {
	reg      *prometheus.Registry
	ingested *prometheus.CounterVec
	latency  prometheus.Histogram
	handler  http.Handler

	mu       sync.RWMutex
	counters map[pair]prometheus.Counter
}

// New builds the collectors on a registry of their own, reading src at
// scrape time.
func New(src Source) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), counters: map[pair]prometheus.Counter{}}
	m.ingested = prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameEventsIngested,
		Help: "Canonical events stored by this node, by agent and event type."}, []string{"agent", "type"})
	m.latency = prometheus.NewHistogram(prometheus.HistogramOpts{Name: NameIngestSeconds,
		Help:    "Time to store one batch of events durably and fold it into the live states.",
		Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}})
	m.reg.MustRegister(m.ingested, m.latency, &scrape{src: src},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.handler = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler { return m.handler }

// Registry is the metrics' registry (tests).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Ingested counts one stored event of agent and type. A pair seen before
// costs a map lookup and an atomic add; nil m counts nothing.
func (m *Metrics) Ingested(agent, typ string) {
	if m == nil {
		return
	}
	k := pair{agent, typ}
	m.mu.RLock()
	c, ok := m.counters[k]
	m.mu.RUnlock()
	if !ok {
		c = m.counter(k)
	}
	c.Inc()
}

func (m *Metrics) counter(k pair) prometheus.Counter {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.counters[k]; ok {
		return c
	}
	if len(m.counters) >= maxSeries {
		o := pair{Other, Other}
		if c, ok := m.counters[o]; ok {
			return c
		}
		c := m.ingested.WithLabelValues(Other, Other)
		m.counters[o] = c
		return c
	}
	c := m.ingested.WithLabelValues(label(k.agent), label(k.typ))
	m.counters[k] = c
	return c
}

// label makes an outside value a safe label value: valid UTF-8, bounded,
// "unknown" when empty.
func label(s string) string {
	if s == "" {
		return "unknown"
	}
	if !utf8.ValidString(s) {
		return "invalid"
	}
	if len(s) > maxLabel {
		cut := maxLabel
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}

// ObserveIngest records the time one ingest took; nil m records nothing.
func (m *Metrics) ObserveIngest(d time.Duration) {
	if m == nil {
		return
	}
	m.latency.Observe(d.Seconds())
}

// scrape is the collector of what is read at scrape time.
type scrape struct{ src Source }

var (
	descSpool = prometheus.NewDesc(NameSpoolDepth,
		"Hook records waiting in the spool for the node to ingest them.", nil, nil)
	descSessions = prometheus.NewDesc(NameSessions,
		"This node's live sessions by activity and lifecycle.", []string{"activity", "lifecycle"}, nil)
	descMembers = prometheus.NewDesc(NameMeshMembers,
		"Gossip members known to this node, by state.", []string{"state"}, nil)
	descRaftState = prometheus.NewDesc(NameRaftState,
		"The registry's raft state of this node: 1 for the current state.", []string{"state"}, nil)
	descRaftContact = prometheus.NewDesc(NameRaftContact,
		"Seconds since the raft leader was last heard from (0 on the leader, -1 when never).", nil, nil)
	descRaftTerm = prometheus.NewDesc(NameRaftTerm,
		"The registry's current raft term.", nil, nil)
	descRaftCommit = prometheus.NewDesc(NameRaftCommit,
		"The raft commit index this node knows.", nil, nil)
	descRaftApplied = prometheus.NewDesc(NameRaftApplied,
		"The raft index the local registry replica reflects.", nil, nil)
)

func (s *scrape) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSpool, descSessions, descMembers, descRaftState,
		descRaftContact, descRaftTerm, descRaftCommit, descRaftApplied} {
		ch <- d
	}
}

func (s *scrape) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(descSpool, prometheus.GaugeValue, float64(s.src.SpoolDepth()))
	for _, c := range s.src.Sessions() {
		ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(c.N),
			label(c.Activity), label(c.Lifecycle))
	}
	m, ok := s.src.Mesh()
	if !ok {
		return
	}
	seen := map[string]bool{}
	for _, st := range MemberStates {
		seen[st] = true
		ch <- prometheus.MustNewConstMetric(descMembers, prometheus.GaugeValue, float64(m.Members[st]), st)
	}
	for st, n := range m.Members {
		if !seen[st] {
			ch <- prometheus.MustNewConstMetric(descMembers, prometheus.GaugeValue, float64(n), label(st))
		}
	}
	for _, st := range RaftStates {
		v := 0.0
		if st == m.RaftState {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(descRaftState, prometheus.GaugeValue, v, st)
	}
	contact := m.LastContact.Seconds()
	if m.LastContact < 0 {
		contact = -1
	}
	ch <- prometheus.MustNewConstMetric(descRaftContact, prometheus.GaugeValue, contact)
	ch <- prometheus.MustNewConstMetric(descRaftTerm, prometheus.GaugeValue, float64(m.Term))
	ch <- prometheus.MustNewConstMetric(descRaftCommit, prometheus.GaugeValue, float64(m.CommitIndex))
	ch <- prometheus.MustNewConstMetric(descRaftApplied, prometheus.GaugeValue, float64(m.AppliedIndex))
}
