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
