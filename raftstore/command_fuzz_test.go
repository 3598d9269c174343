package raftstore

import (
	"testing"
	"time"
)

// FuzzDecodeCommand: log entries arrive from other servers; decoding never
// panics, and a decoded command applies to a registry without panicking.
func FuzzDecodeCommand(f *testing.F) {
	u := Upsert{SessionID: "s", TS: time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC),
		Lifecycle: &LifecyclePatch{TaskState: "blocked", Reason: "r"}}
	if b, err := EncodeCommand(UpsertCommand(u)); err == nil {
		f.Add(b)
	}
	if b, err := EncodeCommand(DeleteCommand("s")); err == nil {
		f.Add(b)
	}
	if b, err := EncodeCommand(KVCommand(KVOp{Key: "trust/token/x", Value: []byte("{}"), IfIndex: 3})); err == nil {
		f.Add(b)
	}
	f.Add([]byte{CommandVersion, '{'})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		cmd, err := DecodeCommand(b)
		if err != nil {
			return
		}
		_ = NewRegistry().Apply(1, cmd)
	})
}

// FuzzDecodeClaimCommand: claim and release entries decode without panic,
// and a decoded one applies to a registry holding claims without panic.
func FuzzDecodeClaimCommand(f *testing.F) {
	for _, c := range []Command{
		ClaimCmd("s", "n", "github.com/o/r", time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC), "a.go", "b/c.go"),
		ReleaseCmd("s", "github.com/o/r", false, "a.go"),
		ReleaseCmd("s", "", true),
	} {
		if b, err := EncodeCommand(c); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"op":"claim","claim":{"session_id":"s","repo":"r","paths":[""]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		cmd, err := DecodeCommand(b)
		if err != nil {
			return
		}
		r := NewRegistry()
		_ = r.Apply(1, ClaimCmd("t", "n", "github.com/o/r", time.Time{}, "a.go"))
		_ = r.Apply(2, cmd)
		_ = r.Claims()
	})
}
