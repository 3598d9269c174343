package mesh

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"pgregory.net/rapid"

	"github.com/harn-dev/harn/util/clock"
)

// TestNumAliveIsTheCountOfAliveAndSuspectMembers: whatever memberlist and
// the direct sends report, in any order (joins, updates, deaths, leaves
// and their intents, failed and successful contacts, pruning), NumAlive
// equals the members listed alive or suspect.
func TestNumAliveIsTheCountOfAliveAndSuspectMembers(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		clk := clock.NewFake(time.Unix(1_700_000_000, 0))
		cfg := validConfig()
		cfg.Name, cfg.Clock = "n0", clk
		cfg.DepartedRetention, cfg.SeenRetention = time.Minute, time.Minute
		m, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		names := []string{"n0", "n1", "n2", "n3"}
		node := func(name string, instance uint64) *memberlist.Node {
			return &memberlist.Node{Name: name, Addr: net.IPv4(127, 0, 0, 1), Port: 7947, Meta: NodeMeta{}.encode(instance)}
		}
		for i := range rapid.IntRange(1, 60).Draw(t, "steps") {
			name := rapid.SampledFrom(names).Draw(t, fmt.Sprintf("name%d", i))
			inst := uint64(rapid.IntRange(1, 2).Draw(t, fmt.Sprintf("instance%d", i)))
			switch op := rapid.IntRange(0, 6).Draw(t, fmt.Sprintf("op%d", i)); op {
			case 0:
				m.onJoin(node(name, inst))
			case 1:
				m.onUpdate(node(name, inst))
			case 2:
				m.onLeave(node(name, inst))
			case 3:
				m.onUnreachable(name)
			case 4:
				m.onReachable(name)
			case 5:
				m.onIntent(leaveIntent{name: name, instance: inst})
			case 6:
				clk.Advance(time.Duration(rapid.IntRange(0, 120).Draw(t, fmt.Sprintf("secs%d", i))) * time.Second)
				m.prune()
			}
			want := 0
			for _, mb := range m.Members() {
				if mb.Status == StatusAlive || mb.Status == StatusSuspect {
					want++
				}
			}
			if got := m.NumAlive(); got != want {
				t.Fatalf("step %d: NumAlive = %d, the members list %d alive or suspect", i, got, want)
			}
		}
	})
}
