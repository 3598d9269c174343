package runtime

import (
	"slices"
	"testing"
	"time"
)

// BenchmarkCheck measures the pre-call check in-process and reports its
// p50 and p99 (target: p99 under 200 µs).
func BenchmarkCheck(b *testing.B) {
	b.Run("harn-loop", func(b *testing.B) {
		f := newFixture(b)
		a := f.start(b, "bench", nil)
		req := f.req("write_file", `{"file_path":"/w/src/a.go"}`)
		benchCheck(b, f.rt, a, req)
	})
	b.Run("external-agent-pattern", func(b *testing.B) {
		rt, _ := New(Config{Ledger: NewMemLedger(), Key: []byte("k")})
		_, _ = rt.SetCatalog("cc", externalCatalog("claude-code"))
		_ = rt.OpenSession("cc", SessionConfig{Catalog: "cc", Workdir: "/repo"})
		gs, _ := ParseGrants([]byte("profile edit\nexecute Bash(git *)\nexecute Bash(npm run test:*)\nexecute Edit(src/**)\n"))
		v, _ := rt.Start("cc", Request{Text: "bench", Grants: gs})
		benchCheck(b, rt, v.ID, CallRequest{Capability: "Bash", Input: []byte(`{"command":"git log --oneline -n 20 -- src/runtime"}`)})
	})
}

func benchCheck(b *testing.B, rt *Runtime, task string, req CallRequest) {
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if _, err := rt.Check(task, req); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	if n := len(lat); n > 0 {
		b.ReportMetric(float64(lat[n/2].Nanoseconds())/1e3, "p50-µs")
		b.ReportMetric(float64(lat[n*99/100].Nanoseconds())/1e3, "p99-µs")
	}
}

// BenchmarkBeginEnd measures a whole call's bookkeeping: check, ledger
// record with the input digest, and the end with the output digest.
func BenchmarkBeginEnd(b *testing.B) {
	f := newFixture(b)
	a := f.start(b, "bench", nil)
	req := f.req("read_file", `{"file_path":"/w/src/a.go"}`)
	out := []byte("package main\n")
	b.ReportAllocs()
	for b.Loop() {
		c, err := f.rt.Begin(a, req)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.End(OutcomeSucceeded, out); err != nil {
			b.Fatal(err)
		}
	}
}
