package raftstore

import (
	"errors"
	"testing"
)

// TestMoveServerKeepsIDAndSuffrage: the leader moves a server to a new
// address under the same ID, a voter stays a voter and a non-voter a
// non-voter; the same address again changes nothing; an unknown ID is
// ErrUnknownServer; a follower refuses with ErrNotLeader.
func TestMoveServerKeepsIDAndSuffrage(t *testing.T) {
	c := MakeCluster(t, 4, 3)
	l := c.Leader()
	var voter, nonvoter string
	servers, err := l.Servers()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		switch {
		case !s.Voter:
			nonvoter = s.ID
		case s.ID != l.ID() && voter == "":
			voter = s.ID
		}
	}
	if voter == "" || nonvoter == "" {
		t.Fatalf("servers %+v", servers)
	}
	for _, mv := range []struct{ id, addr string }{{voter, "moved-voter:1"}, {nonvoter, "moved-nonvoter:1"}, {voter, "moved-voter:1"}} {
		if err := l.MoveServer(mv.id, mv.addr); err != nil {
			t.Fatalf("move %s to %s: %v", mv.id, mv.addr, err)
		}
	}
	after, err := l.Servers()
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(servers) {
		t.Fatalf("servers %+v, before %+v", after, servers)
	}
	for _, s := range after {
		switch s.ID {
		case voter:
			if s.Addr != "moved-voter:1" || !s.Voter {
				t.Errorf("voter after the move: %+v", s)
			}
		case nonvoter:
			if s.Addr != "moved-nonvoter:1" || s.Voter {
				t.Errorf("non-voter after the move: %+v", s)
			}
		}
	}
	if err := l.MoveServer("nobody", "x:1"); !errors.Is(err, ErrUnknownServer) {
		t.Errorf("move of an unknown id: %v", err)
	}
	for _, f := range c.Followers() {
		if err := f.MoveServer(voter, "x:1"); !errors.Is(err, ErrNotLeader) {
			t.Errorf("follower %s: %v", f.ID(), err)
		}
		break
	}
}
