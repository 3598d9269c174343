package raftstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"
)

var claimT0 = time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC)

type fataler interface{ Fatalf(string, ...any) }

func applyOK(t fataler, r *Registry, idx uint64, c Command) {
	if err := r.Apply(idx, c); err != nil {
		t.Fatalf("apply %d: %v", idx, err)
	}
}

func holder(r *Registry, repo, path string) string {
	c, ok := r.ClaimOf(repo, path)
	if !ok {
		return ""
	}
	return c.SessionID
}

func TestFirstClaimInLogOrderWins(t *testing.T) {
	r := NewRegistry()
	mustApply(t, r, 1, ClaimCmd("a", "n1", "github.com/o/r", claimT0, "pkg/x.go"))
	mustApply(t, r, 2, ClaimCmd("b", "n2", "github.com/o/r", claimT0.Add(-time.Hour), "pkg/x.go"))
	if h := holder(r, "github.com/o/r", "pkg/x.go"); h != "a" {
		t.Fatalf("holder %q, want the first claimant a (an older ts does not jump the log)", h)
	}
	c, _ := r.ClaimOf("github.com/o/r", "pkg/x.go")
	if c.Index != 1 || c.Node != "n1" {
		t.Fatalf("claim %+v", c)
	}
	// The same session claiming again keeps its first index.
	mustApply(t, r, 3, ClaimCmd("a", "n1", "github.com/o/r", claimT0, "pkg/x.go"))
	if c, _ := r.ClaimOf("github.com/o/r", "pkg/x.go"); c.Index != 1 {
		t.Fatalf("reclaim moved the index: %+v", c)
	}
	// Another repository's same path is another claim.
	mustApply(t, r, 4, ClaimCmd("b", "n2", "github.com/o/other", claimT0, "pkg/x.go"))
	if h := holder(r, "github.com/o/other", "pkg/x.go"); h != "b" {
		t.Fatalf("other repo: %q", h)
	}
}

func TestClaimIsAllOrNothing(t *testing.T) {
	r := NewRegistry()
	mustApply(t, r, 1, ClaimCmd("a", "n1", "R", claimT0, "x"))
	mustApply(t, r, 2, ClaimCmd("b", "n2", "R", claimT0, "y", "x"))
	if h := holder(r, "R", "y"); h != "" {
		t.Fatalf("a losing claim took y: %q", h)
	}
}

func TestReleaseAndReleaseAll(t *testing.T) {
	r := NewRegistry()
	mustApply(t, r, 1, ClaimCmd("a", "n1", "R", claimT0, "x", "y", "z"))
	mustApply(t, r, 2, ReleaseCmd("b", "R", false, "x")) // not b's: no change
	if holder(r, "R", "x") != "a" {
		t.Fatal("another session's release dropped a's claim")
	}
	mustApply(t, r, 3, ReleaseCmd("a", "R", false, "x"))
	if holder(r, "R", "x") != "" || holder(r, "R", "y") != "a" {
		t.Fatal("release of x")
	}
	mustApply(t, r, 4, ClaimCmd("b", "n2", "R", claimT0, "x"))
	if holder(r, "R", "x") != "b" {
		t.Fatal("a released path is free")
	}
	mustApply(t, r, 5, ReleaseCmd("a", "", true))
	if len(r.ClaimsOf("a")) != 0 || len(r.Claims()) != 1 {
		t.Fatalf("release all: %+v", r.Claims())
	}
}

func TestClaimsEndWithTheSession(t *testing.T) {
	r := NewRegistry()
	mustApply(t, r, 1, UpsertCommand(Upsert{SessionID: "a", TS: claimT0, Identity: &IdentityPatch{Node: "n1"}}))
	mustApply(t, r, 2, ClaimCmd("a", "n1", "R", claimT0, "x"))
	mustApply(t, r, 3, UpsertCommand(Upsert{SessionID: "a", TS: claimT0.Add(time.Second), End: &EndPatch{Ended: true}}))
	if holder(r, "R", "x") != "" || len(r.claimSessions()) != 0 {
		t.Fatal("an ended session still holds its claim")
	}
	mustApply(t, r, 4, ClaimCmd("c", "n1", "R", claimT0, "y"))
	mustApply(t, r, 5, DeleteCommand("c"))
	if holder(r, "R", "y") != "" {
		t.Fatal("a deleted session still holds its claim")
	}
}

func TestClaimsSurviveSnapshot(t *testing.T) {
	r := NewRegistry()
	mustApply(t, r, 1, ClaimCmd("a", "n1", "R", claimT0, "x", "y"))
	b, err := r.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	r2 := NewRegistry()
	if err := r2.Restore(b); err != nil {
		t.Fatal(err)
	}
	if holder(r2, "R", "y") != "a" || len(r2.ClaimsOf("a")) != 2 {
		t.Fatal("claims lost in the snapshot")
	}
	b2, _ := r2.Snapshot()
	if !bytes.Equal(b, b2) {
		t.Fatal("snapshot of a restored registry differs")
	}
}

func TestClaimCommandValidation(t *testing.T) {
	for name, c := range map[string]Command{
		"no body":       {Op: OpClaim},
		"no repo":       ClaimCmd("a", "n", "", claimT0, "x"),
		"no paths":      ClaimCmd("a", "n", "R", claimT0),
		"empty path":    ClaimCmd("a", "n", "R", claimT0, ""),
		"nul path":      ClaimCmd("a", "n", "R", claimT0, "a\x00b"),
		"no session":    ClaimCmd("", "n", "R", claimT0, "x"),
		"all on claim":  {Op: OpClaim, Claim: &ClaimCommand{SessionID: "a", All: true}},
		"all and paths": ReleaseCmd("a", "R", true, "x"),
		"body on upsert": {Op: OpUpsert, Upserts: []Upsert{{SessionID: "a", TS: claimT0, Task: &TaskPatch{}}},
			Claim: &ClaimCommand{SessionID: "a"}},
	} {
		if err := c.Validate(); !errors.Is(err, ErrInvalidCommand) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := ReleaseCmd("a", "", true).Validate(); err != nil {
		t.Error(err)
	}
}

// TestClaimReplayIsDeterministic: replicas applying one log hold one
// claim table, whatever the commands; each claimed key has exactly the
// holder a sequential model says (the first live claimant).
func TestClaimReplayIsDeterministic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sessions := []string{"a", "b", "c"}
		paths := []string{"x", "y", "z"}
		n := rapid.IntRange(1, 40).Draw(t, "n")
		var log []Command
		for i := 0; i < n; i++ {
			s := rapid.SampledFrom(sessions).Draw(t, "s")
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0, 1:
				ps := rapid.SliceOfNDistinct(rapid.SampledFrom(paths), 1, 3, rapid.ID[string]).Draw(t, "paths")
				log = append(log, ClaimCmd(s, "n-"+s, "R", claimT0, ps...))
			case 2:
				log = append(log, ReleaseCmd(s, "R", false, rapid.SampledFrom(paths).Draw(t, "p")))
			case 3:
				log = append(log, ReleaseCmd(s, "", true))
			}
		}
		a, b := NewRegistry(), NewRegistry()
		model := map[string]string{}
		for i, c := range log {
			applyOK(t, a, uint64(i+1), c)
			applyOK(t, b, uint64(i+1), c)
			p := c.Claim
			switch {
			case c.Op == OpRelease && p.All:
				for k, v := range model {
					if v == p.SessionID {
						delete(model, k)
					}
				}
			case c.Op == OpRelease:
				if model[p.Paths[0]] == p.SessionID {
					delete(model, p.Paths[0])
				}
			default:
				free := true
				for _, path := range p.Paths {
					if h := model[path]; h != "" && h != p.SessionID {
						free = false
					}
				}
				if free {
					for _, path := range p.Paths {
						model[path] = p.SessionID
					}
				}
			}
		}
		sa, _ := a.Snapshot()
		sb, _ := b.Snapshot()
		if !bytes.Equal(sa, sb) {
			t.Fatal("replicas differ")
		}
		for _, path := range paths {
			if got := holder(a, "R", path); got != model[path] {
				t.Fatalf("%s held by %q, model says %q", path, got, model[path])
			}
		}
	})
}

// TestRaceOneWinnerOnEveryReplay: two sessions on two nodes claim one path
// at the same instant through Raft; exactly one wins, every replica agrees,
// and a replica that replays the log from the start (restart) agrees too.
func TestRaceOneWinnerOnEveryReplay(t *testing.T) {
	for round := 0; round < 5; round++ {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			c := MakeCluster(t, 3, 3)
			defer c.Close()
			path := fmt.Sprintf("pkg/x%d.go", round)
			var wg sync.WaitGroup
			for _, s := range []string{"on-a", "on-b"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c.Apply(ClaimCmd(s, "node-"+s, "github.com/o/r", claimT0, path))
				}()
			}
			wg.Wait()
			c.EnsureSame(t)
			var winner string
			for _, s := range c.Running() {
				deadline := time.Now().Add(5 * time.Second)
				for s.Staleness().AppliedIndex < c.Leader().Staleness().AppliedIndex && time.Now().Before(deadline) {
					time.Sleep(5 * time.Millisecond)
				}
				h, ok := s.ClaimOf("github.com/o/r", path)
				if !ok {
					t.Fatalf("%s: nobody won", s.ID())
				}
				if winner == "" {
					winner = h.SessionID
				} else if h.SessionID != winner {
					t.Fatalf("replicas disagree: %s vs %s", winner, h.SessionID)
				}
			}
			// Replay: stop a follower and start it again from its log.
			f := c.Followers()[0]
			id := f.ID()
			c.Stop(id)
			r := c.Restart(id)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := r.WaitForApplied(ctx, c.Leader().Staleness().AppliedIndex); err != nil {
				t.Fatal(err)
			}
			if h, _ := r.ClaimOf("github.com/o/r", path); h.SessionID != winner {
				t.Fatalf("replay chose %q, the cluster %q", h.SessionID, winner)
			}
		})
	}
}
