package cluster

import "testing"

// TestAnIdleNodeGossipsNoDigest: the digest goes out at the DigestRepeats
// ticks after the presence changed, and not at all while it stays the
// same; a change starts the repeats again.
func TestAnIdleNodeGossipsNoDigest(t *testing.T) {
	var cad digestCadence
	var got []bool
	for _, d := range []string{"a", "a", "a", "a", "a", "a", "b", "b", "b", "b", "b"} {
		got = append(got, cad.tick(d))
	}
	want := []bool{true, true, true, false, false, false, true, true, true, false, false}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("tick %d: gossiped %v, want %v (all: %v)", i, got[i], want[i], got)
		}
	}
}

// TestAnIdleNodeFollowsNoSettings: the registry's settings are followed
// the first time, after a change of the key-value space or of the
// leadership, and at every tick while the trust room has pending work;
// never while nothing moved.
func TestAnIdleNodeFollowsNoSettings(t *testing.T) {
	var g followGate
	idle := followState{kvIndex: 7, leader: "s0"}
	steps := []struct {
		st   followState
		want bool
	}{
		{idle, true},
		{idle, false},
		{idle, false},
		{followState{kvIndex: 9, leader: "s0"}, true},
		{followState{kvIndex: 9, leader: "s0"}, false},
		{followState{kvIndex: 9, leader: "s1"}, true},
		{followState{kvIndex: 9, leader: "s1", busy: true}, true},
		{followState{kvIndex: 9, leader: "s1", busy: true}, true},
		{followState{kvIndex: 9, leader: "s1"}, true},
		{followState{kvIndex: 9, leader: "s1"}, false},
	}
	for i, s := range steps {
		if got := g.due(s.st); got != s.want {
			t.Fatalf("step %d (%+v): due %v, want %v", i, s.st, got, s.want)
		}
	}
}
