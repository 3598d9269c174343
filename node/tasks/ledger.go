package tasks

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/harn-dev/harn/runtime"
)

// KV is the keyspace the runtime ledger lives in (node/ledger's PutKV and
// ScanKV).
type KV interface {
	PutKV(space string, key, val []byte) error
	ScanKV(space string, prefix []byte, fn func(key, val []byte) error) error
}

// SyncKV is a KV that can also write with an fsync (node/ledger's
// PutKVSync). The records that must survive even a kill -9 right after
// them use it: see mustSync.
type SyncKV interface {
	PutKVSync(space string, key, val []byte) error
}

// mustSync reports whether r is one of the records written with an fsync:
// a mutating call's unknown outcome (it holds the session's mutations
// until an ack), an acknowledgement, and a task's terminal state. They are
// rare; the hot path (call begin and end) stays without fsync.
func mustSync(r runtime.Record) bool {
	switch r.Kind {
	case runtime.RecEnd:
		return r.Status == string(runtime.OutcomeUnknown) && !r.ReadOnly
	case runtime.RecAck, runtime.RecCancel, runtime.RecLift:
		return true // a cancel's refusal, and its end, must outlive a kill -9
	case runtime.RecState:
		return r.State == runtime.StateTerminal
	}
	return false
}

// Space is the keyspace name of the runtime ledger.
const Space = "runtime"

// ErrBadTaskID refuses a task id that cannot be a ledger key.
var ErrBadTaskID = errors.New("tasks: bad task id")

// Ledger is runtime.Ledger on the node's Pebble store: one record per key
// <task>\x00<seq:8 BE>, so that a task's records read back in order.
type Ledger struct{ kv KV }

// NewLedger returns the runtime ledger on kv.
func NewLedger(kv KV) *Ledger { return &Ledger{kv: kv} }

var _ runtime.Ledger = (*Ledger)(nil)

func recordKey(task string, seq uint64) []byte {
	k := make([]byte, 0, len(task)+9)
	k = append(k, task...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, seq)
}

func validTask(task string) error {
	for i := 0; i < len(task); i++ {
		if task[i] == 0 {
			return fmt.Errorf("%w %q", ErrBadTaskID, task)
		}
	}
	if task == "" {
		return ErrBadTaskID
	}
	return nil
}

// Append stores r after the task's earlier records.
func (l *Ledger) Append(r runtime.Record) error {
	if err := validTask(r.Task); err != nil {
		return err
	}
	b, err := runtime.EncodeRecord(r)
	if err != nil {
		return err
	}
	if s, ok := l.kv.(SyncKV); ok && mustSync(r) {
		return s.PutKVSync(Space, recordKey(r.Task, r.Seq), b)
	}
	return l.kv.PutKV(Space, recordKey(r.Task, r.Seq), b)
}

// Records returns the task's records in append order.
func (l *Ledger) Records(task string) ([]runtime.Record, error) {
	if err := validTask(task); err != nil {
		return nil, err
	}
	var out []runtime.Record
	err := l.kv.ScanKV(Space, append([]byte(task), 0), func(_, v []byte) error {
		r, err := runtime.DecodeRecord(v)
		if err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	return out, err
}
