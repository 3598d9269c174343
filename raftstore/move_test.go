package raftstore

import (
	"errors"
	"testing"
)

// TestMoveServerRefusals: a move of an ID the configuration does not hold
// is ErrUnknownServer, one without an address ErrConfig, and a follower
// refuses any with ErrNotLeader; a move to the address a server already
// has changes nothing.
func TestMoveServerRefusals(t *testing.T) {
	c := MakeCluster(t, 3, 3)
	l := c.Leader()
	if err := l.MoveServer("nobody", "x:1"); !errors.Is(err, ErrUnknownServer) {
		t.Errorf("move of an unknown id: %v", err)
	}
	if err := l.MoveServer(l.ID(), ""); !errors.Is(err, ErrConfig) {
		t.Errorf("move without an address: %v", err)
	}
	if err := l.MoveServer(l.ID(), l.Addr()); err != nil {
		t.Errorf("move to the same address: %v", err)
	}
	for _, f := range c.Followers() {
		if err := f.MoveServer(l.ID(), "x:1"); !errors.Is(err, ErrNotLeader) {
			t.Errorf("follower %s: %v", f.ID(), err)
		}
	}
	servers, err := l.Servers()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		if s.ID == l.ID() && s.Addr != l.Addr() {
			t.Errorf("a refused move changed the leader's entry: %+v", s)
		}
	}
}
