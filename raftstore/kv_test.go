package raftstore

import (
	"bytes"
	"errors"
	"testing"

	"pgregory.net/rapid"
)

func TestKVConditionalWriteIsAllOrNone(t *testing.T) {
	r := NewRegistry()
	if err := r.Apply(1, KVCommand(KVOp{Key: "a", Value: []byte("1"), IfAbsent: true})); err != nil {
		t.Fatal(err)
	}
	err := r.Apply(2, KVCommand(KVOp{Key: "b", Value: []byte("2")}, KVOp{Key: "a", Value: []byte("x"), IfAbsent: true}))
	if !errors.Is(err, ErrKVConflict) {
		t.Fatalf("want ErrKVConflict, got %v", err)
	}
	if _, ok := r.KVGet("b"); ok {
		t.Fatal("a refused command wrote b")
	}
	if err := r.Apply(3, KVCommand(KVOp{Key: "a", Value: []byte("2"), IfIndex: 2})); !errors.Is(err, ErrKVConflict) {
		t.Fatalf("stale if_index: %v", err)
	}
	if err := r.Apply(4, KVCommand(KVOp{Key: "a", Value: []byte("2"), IfIndex: 1})); err != nil {
		t.Fatal(err)
	}
	e, _ := r.KVGet("a")
	if string(e.Value) != "2" || e.Index != 4 {
		t.Fatalf("got %+v", e)
	}
	if err := r.Apply(5, KVCommand(KVOp{Key: "a", Delete: true})); err != nil {
		t.Fatal(err)
	}
	if got := r.KVList(""); len(got) != 0 {
		t.Fatalf("left %v", got)
	}
}

// TestKVReplicasStayEqual: replicas that apply the same log give equal
// snapshots, whatever the writes and their conditions.
func TestKVReplicasStayEqual(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b := NewRegistry(), NewRegistry()
		n := rapid.IntRange(1, 40).Draw(t, "n")
		for i := 1; i <= n; i++ {
			op := KVOp{Key: rapid.SampledFrom([]string{"k1", "k2", "trust/x"}).Draw(t, "key"),
				Value:    []byte(rapid.StringN(0, 4, -1).Draw(t, "v")),
				Delete:   rapid.Bool().Draw(t, "del"),
				IfIndex:  uint64(rapid.IntRange(0, i).Draw(t, "if")),
				IfAbsent: false}
			if op.IfIndex == 0 {
				op.IfAbsent = rapid.Bool().Draw(t, "absent")
			}
			cmd := KVCommand(op)
			b1, err := EncodeCommand(cmd)
			if err != nil {
				t.Fatal(err)
			}
			dec, err := DecodeCommand(b1)
			if err != nil {
				t.Fatal(err)
			}
			ea, eb := a.Apply(uint64(i), cmd), b.Apply(uint64(i), dec)
			if (ea == nil) != (eb == nil) {
				t.Fatalf("replicas disagree: %v / %v", ea, eb)
			}
		}
		sa, _ := a.Snapshot()
		sb, _ := b.Snapshot()
		if !bytes.Equal(sa, sb) {
			t.Fatal("snapshots differ")
		}
		c := NewRegistry()
		if err := c.Restore(sa); err != nil {
			t.Fatal(err)
		}
		sc, _ := c.Snapshot()
		if !bytes.Equal(sa, sc) {
			t.Fatal("restore changed the snapshot")
		}
	})
}

func TestKVCommandValidation(t *testing.T) {
	for name, cmd := range map[string]Command{
		"empty":        {Op: OpKV},
		"bad key":      KVCommand(KVOp{Key: "a b"}),
		"both conds":   KVCommand(KVOp{Key: "a", IfAbsent: true, IfIndex: 3}),
		"kv on upsert": {Op: OpDelete, SessionIDs: []string{"s"}, KV: []KVOp{{Key: "a"}}},
		"huge value":   KVCommand(KVOp{Key: "a", Value: make([]byte, MaxKVValue+1)}),
	} {
		if err := cmd.Validate(); !errors.Is(err, ErrInvalidCommand) {
			t.Errorf("%s: want ErrInvalidCommand, got %v", name, err)
		}
	}
}
