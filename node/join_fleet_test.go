package node

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/util/clock"
)

// TestAFleetJoinsAtOnceWithOneToken: 30 joins at once, from one address,
// with one token of 30 uses, all pass: none is refused by the rate limit
// (meant for failed guesses) and their token writes do not conflict (the
// server's redemptions take turns); a 31st finds the token used up.
func TestAFleetJoinsAtOnceWithOneToken(t *testing.T) {
	m, _ := startTrustMesh(t)
	const fleet = 30
	tok, err := trust.ParseToken(m.token(false, time.Hour, fleet))
	if err != nil {
		t.Fatal(err)
	}
	addr := m.nodes[0].RPCAddr()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	errs := make(chan error, fleet)
	var wg sync.WaitGroup
	for i := range fleet {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := trust.Join(ctx, addr, tok, fmt.Sprintf("box%02d", i), trust.JoinClock(clock.Real{}))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a join of the fleet: %v", err)
		}
	}
	if n := m.nodes[0].cl.Parts().Trust.RedeemConflicts(); n != 0 {
		t.Fatalf("%d conflicting token writes", n)
	}
	if _, err := trust.Join(ctx, addr, tok, "box99", trust.JoinClock(clock.Real{})); err == nil {
		t.Fatal("a join past the token's uses passed")
	}
}
