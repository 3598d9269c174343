package tools

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/harn-dev/harn/runtime"
)

// BenchmarkPreCallCheck500Tools measures the pre-call check a harn loop
// asks before each call (runtime.Begin with the spec's contract hash,
// then End), with 500 tools in the catalog (the core and discovery tools,
// and 489 MCP tools of one server), against a bare map lookup of the same
// name and hash in the same run. Target: p99 under 200 µs. The ledger
// drops its records: the growing slice of the in-memory test ledger would
// be measured instead of the check (the node's Pebble ledger has its own
// figures).
func BenchmarkPreCallCheck500Tools(b *testing.B) {
	rt, err := runtime.New(runtime.Config{Ledger: nopLedger{}, Key: []byte("bench-key-0123456789")})
	if err != nil {
		b.Fatal(err)
	}
	box, err := New(Config{Runtime: rt, NoMCPFiles: true, SkillDirs: []string{}})
	if err != nil {
		b.Fatal(err)
	}
	caps := box.Capabilities()
	for i := len(caps); i < 500; i++ {
		s := `{"properties":{"q":{"type":"string"}},"type":"object","n":` + strconv.Itoa(i) + `}`
		caps = append(caps, runtime.Capability{Name: "mcp__bench__tool_" + strconv.Itoa(i), Kind: runtime.KindTool,
			Description: "a benchmark tool", ContractHash: Hash([]byte(s)), Provider: "mcp:bench", Tokens: 40})
	}
	if _, err := rt.SetCatalog(box.Catalog(), caps); err != nil {
		b.Fatal(err)
	}
	if err := rt.OpenSession("bench", runtime.SessionConfig{Catalog: box.Catalog(), Workdir: "/w",
		Budget: runtime.Budget{UsableInput: 200000, Base: 2000}}); err != nil {
		b.Fatal(err)
	}
	grants, _ := runtime.Profile("edit")
	grants = append(grants, runtime.Grant{Level: runtime.Execute, Capability: "mcp__bench__*"})
	v, err := rt.Start("bench", runtime.Request{Text: "bench", Grants: grants})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := rt.Next(ctx, "bench"); err != nil {
		b.Fatal(err)
	}
	target := caps[len(caps)-1]
	if _, err := rt.Load(v.ID, target.Name); err != nil {
		b.Fatal(err)
	}
	req := runtime.CallRequest{Capability: target.Name, Input: []byte(`{"q":"find the thing"}`), ContractHash: target.ContractHash}
	out := []byte("a result")

	b.Run("harn-begin-end", func(b *testing.B) {
		lat := make([]time.Duration, 0, 1<<16)
		b.ReportAllocs()
		for b.Loop() {
			t0 := time.Now()
			c, err := rt.Begin(v.ID, req)
			if err != nil {
				b.Fatal(err)
			}
			if err := c.End(runtime.OutcomeSucceeded, out); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		report(b, lat)
	})
	b.Run("harn-check", func(b *testing.B) {
		lat := make([]time.Duration, 0, 1<<16)
		b.ReportAllocs()
		for b.Loop() {
			t0 := time.Now()
			if _, err := rt.Check(v.ID, req); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		report(b, lat)
	})
	b.Run("bare-map", func(b *testing.B) {
		m := make(map[string]runtime.Capability, len(caps))
		for _, c := range caps {
			m[c.Name] = c
		}
		lat := make([]time.Duration, 0, 1<<16)
		b.ReportAllocs()
		for b.Loop() {
			t0 := time.Now()
			if c, ok := m[req.Capability]; !ok || c.ContractHash != req.ContractHash {
				b.Fatal("lookup")
			}
			lat = append(lat, time.Since(t0))
		}
		report(b, lat)
	})
}

func report(b *testing.B, lat []time.Duration) {
	b.StopTimer()
	slices.Sort(lat)
	if n := len(lat); n > 0 {
		b.ReportMetric(float64(lat[n/2].Nanoseconds())/1e3, "p50-µs")
		b.ReportMetric(float64(lat[n*99/100].Nanoseconds())/1e3, "p99-µs")
	}
}

// nopLedger drops every record.
type nopLedger struct{}

func (nopLedger) Append(runtime.Record) error              { return nil }
func (nopLedger) Records(string) ([]runtime.Record, error) { return nil, nil }
