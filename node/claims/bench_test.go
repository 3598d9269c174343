package claims

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/harn-dev/harn/raftstore"
)

// BenchmarkDecideWrite measures the claim decision of a PreToolUse write
// in the node: with no claims in the mesh and with 10,000 live claims of
// other sessions. The writer already holds its path (the steady state of
// an agent editing its files), so no registry write is in the figure; it
// reports p50 and p99.
func BenchmarkDecideWrite(b *testing.B) {
	for _, n := range []int{0, 10000} {
		b.Run(fmt.Sprintf("claims=%d", n), func(b *testing.B) {
			l := NewLocal()
			ctx := context.Background()
			for i := 0; i < n; i++ {
				_ = l.Write(ctx, raftstore.ClaimCmd(fmt.Sprintf("other-%d", i%500), "B", "github.com/o/r", time.Time{}, fmt.Sprintf("pkg/f%05d.go", i)))
			}
			d := New(Config{Mode: ModeEnforce, Node: "A", Table: l, Writer: l, Describe: fakeDescribe{}})
			req := Request{Session: "me", Repo: "github.com/o/r", Paths: []string{"cmd/main.go"}}
			d.Decide(ctx, req)
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t := time.Now()
				if v := d.Decide(ctx, req); v.Decision != DecideAllow {
					b.Fatal(v)
				}
				lat = append(lat, time.Since(t))
			}
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50_ns")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99_ns")
		})
	}
}
