package metrics

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

type fakeSource struct {
	spool    int
	sessions []SessionCount
	mesh     *Mesh
}

func (f *fakeSource) SpoolDepth() int          { return f.spool }
func (f *fakeSource) Sessions() []SessionCount { return f.sessions }
func (f *fakeSource) Mesh() (Mesh, bool) {
	if f.mesh == nil {
		return Mesh{}, false
	}
	return *f.mesh, true
}

// Scrape fetches h's /metrics and parses it with the client library's
// text parser.
func Scrape(t testing.TB, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, rec.Body)
	}
	return fams
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// value finds the sample of family name whose labels include want.
func value(t testing.TB, fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	t.Helper()
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		ls := labels(m)
		for k, v := range want {
			if ls[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func TestMetricsParseWithTheTextParserAndCoverEveryFamily(t *testing.T) {
	src := &fakeSource{spool: 3,
		sessions: []SessionCount{{"working", "active", 2}, {"needs_input", "blocked", 1}},
		mesh: &Mesh{Members: map[string]int{"alive": 2, "dead": 1}, RaftState: "Leader",
			LastContact: 0, Term: 4, CommitIndex: 99, AppliedIndex: 98}}
	m := New(src)
	m.Ingested("claude-code", "turn.started")
	m.Ingested("claude-code", "turn.started")
	m.Ingested("codex", "session.started")
	m.ObserveIngest(3 * time.Millisecond)
	fams := Scrape(t, m.Handler())
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{NameEventsIngested, map[string]string{"agent": "claude-code", "type": "turn.started"}, 2},
		{NameEventsIngested, map[string]string{"agent": "codex", "type": "session.started"}, 1},
		{NameIngestSeconds, nil, 1},
		{NameSpoolDepth, nil, 3},
		{NameSessions, map[string]string{"activity": "working", "lifecycle": "active"}, 2},
		{NameSessions, map[string]string{"activity": "needs_input", "lifecycle": "blocked"}, 1},
		{NameMeshMembers, map[string]string{"state": "alive"}, 2},
		{NameMeshMembers, map[string]string{"state": "dead"}, 1},
		{NameMeshMembers, map[string]string{"state": "suspect"}, 0},
		{NameRaftState, map[string]string{"state": "Leader"}, 1},
		{NameRaftState, map[string]string{"state": "Follower"}, 0},
		{NameRaftContact, nil, 0},
		{NameRaftTerm, nil, 4},
		{NameRaftCommit, nil, 99},
		{NameRaftApplied, nil, 98},
	} {
		got, ok := value(t, fams, c.name, c.labels)
		if !ok || got != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if f := fams[NameIngestSeconds]; f.GetType() != dto.MetricType_HISTOGRAM {
		t.Errorf("%s is %v, want a histogram", NameIngestSeconds, f.GetType())
	}
	if f := fams[NameEventsIngested]; f.GetType() != dto.MetricType_COUNTER {
		t.Errorf("%s is %v, want a counter", NameEventsIngested, f.GetType())
	}
}

func TestMeshFamiliesAreAbsentWithoutTheMesh(t *testing.T) {
	fams := Scrape(t, New(&fakeSource{}).Handler())
	for _, n := range []string{NameMeshMembers, NameRaftState, NameRaftCommit} {
		if fams[n] != nil {
			t.Errorf("%s is reported by a node without the mesh", n)
		}
	}
	if _, ok := value(t, fams, NameSpoolDepth, nil); !ok {
		t.Error("no spool depth")
	}
}

func TestIngestLabelsAreBoundedAndSafe(t *testing.T) {
	m := New(&fakeSource{})
	for i := range maxSeries + 50 {
		m.Ingested("agent", strings.Repeat("x", i%200)+string(rune('a'+i%26))+strings.Repeat("y", i))
	}
	m.Ingested("bad\xff", "t")
	m.Ingested("", "")
	fams := Scrape(t, m.Handler())
	f := fams[NameEventsIngested]
	if n := len(f.GetMetric()); n > maxSeries+1 {
		t.Errorf("%d series, want at most %d", n, maxSeries+1)
	}
	if _, ok := value(t, fams, NameEventsIngested, map[string]string{"agent": Other, "type": Other}); !ok {
		t.Error("pairs past the bound are not counted as other")
	}
	for _, mt := range f.GetMetric() {
		for _, l := range mt.GetLabel() {
			if len(l.GetValue()) > maxLabel {
				t.Errorf("label %s is %d bytes", l.GetName(), len(l.GetValue()))
			}
		}
	}
}

// TestCountingAnIngestedEventDoesNotAllocate: the ingest path's counter
// costs no allocation once its label pair was seen.
func TestCountingAnIngestedEventDoesNotAllocate(t *testing.T) {
	m := New(&fakeSource{})
	m.Ingested("claude-code", "tool.started")
	if a := testing.AllocsPerRun(1000, func() {
		m.Ingested("claude-code", "tool.started")
		m.ObserveIngest(time.Millisecond)
	}); a != 0 {
		t.Errorf("%v allocations per counted event, want 0", a)
	}
	var nilM *Metrics
	nilM.Ingested("a", "b") // a node without metrics counts nothing
	nilM.ObserveIngest(time.Second)
}

func BenchmarkIngested(b *testing.B) {
	m := New(&fakeSource{})
	b.ReportAllocs()
	for b.Loop() {
		m.Ingested("claude-code", "tool.started")
	}
}
