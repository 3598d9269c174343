package runtime

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"
)

// RecordVersion is the schema version of ledger records this package
// writes and reads.
const RecordVersion = 1

// MaxRecordBytes bounds one encoded ledger record.
const MaxRecordBytes = 8 << 10

// RecordKind names what a ledger record says.
type RecordKind string

// The record kinds.
const (
	RecSubmit  RecordKind = "task.submit"  // a task was created (Status: its action)
	RecState   RecordKind = "task.state"   // a task changed state (State, Status)
	RecBegin   RecordKind = "call.begin"   // a call passed its checks and started (or waits: Status pending)
	RecRefused RecordKind = "call.refused" // a call was refused (Status: the check)
	RecEnd     RecordKind = "call.end"     // a call settled (Status: its outcome)
	RecConfirm RecordKind = "call.confirm" // an operator confirmed a waiting call
	RecDeny    RecordKind = "call.deny"    // an operator denied a waiting call
	RecReduce  RecordKind = "grant.reduce" // the ceiling shrank (Capability, Level)
	RecCancel  RecordKind = "task.cancel"  // cancellation was requested (Status: cancelled or superseded)
	RecAck     RecordKind = "task.ack"     // an operator acknowledged unknown outcomes
	RecModel   RecordKind = "model.call"   // a model call of harn's agent loop (Capability: the model; Usage)
	// RecLift: a cancelled task's refusal of its session's calls lifted
	// (the agent's turn ended, or a new task started; Reason says which).
	RecLift RecordKind = "task.lift"

	RecRevoke      RecordKind = "capability.revoke"  // a global revocation (Capability: the pattern)
	RecRestore     RecordKind = "capability.restore" // a global revocation lifted
	RecProviderOff RecordKind = "provider.disable"   // a provider disabled globally (Status: the provider)
	RecProviderOn  RecordKind = "provider.enable"    // a provider enabled again
)

var recordKinds = map[RecordKind]bool{RecSubmit: true, RecState: true, RecBegin: true, RecRefused: true, RecEnd: true,
	RecConfirm: true, RecDeny: true, RecReduce: true, RecCancel: true, RecAck: true, RecLift: true, RecModel: true,
	RecRevoke: true, RecRestore: true, RecProviderOff: true, RecProviderOn: true}

// Record is one append-only ledger entry. Input and Output carry keyed
// digests of the call's evidence (HMAC-SHA256 with the node key), never the
// raw data.
type Record struct {
	V          int        `json:"v"`
	Seq        uint64     `json:"seq"` // per task, from 1
	TS         time.Time  `json:"ts"`
	Session    string     `json:"session"`
	Task       string     `json:"task"`
	Kind       RecordKind `json:"kind"`
	Call       string     `json:"call,omitempty"`
	Capability string     `json:"capability,omitempty"`
	Level      string     `json:"level,omitempty"`
	State      State      `json:"state,omitempty"`
	Status     string     `json:"status,omitempty"`
	By         string     `json:"by,omitempty"`
	Reason     string     `json:"reason,omitempty"`
	Input      string     `json:"input,omitempty"`
	Output     string     `json:"output,omitempty"`
	// ReadOnly (call.begin, call.end): the call's capability is
	// read-only, so an unknown outcome holds nothing. A call without it is
	// taken as mutating when holds are rebuilt (fail closed).
	ReadOnly bool `json:"read_only,omitempty"`
	// Usage (model.call): the tokens of one model call, as estimated
	// before it and as the provider reported them.
	Usage *Usage `json:"usage,omitempty"`
}

// Ledger stores the runtime's records in append order. The node backs it
// with Pebble; MemLedger serves tests.
type Ledger interface {
	Append(r Record) error
	Records(task string) ([]Record, error)
}

// MemLedger is an in-memory Ledger, safe for concurrent use.
type MemLedger struct {
	mu     sync.Mutex
	all    []Record
	byTask map[string][]int
	fail   error
}

// NewMemLedger returns an empty in-memory ledger.
func NewMemLedger() *MemLedger { return &MemLedger{byTask: map[string][]int{}} }

// Append stores r, or returns the error set with FailWith.
func (m *MemLedger) Append(r Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	m.byTask[r.Task] = append(m.byTask[r.Task], len(m.all))
	m.all = append(m.all, r)
	return nil
}

// Records returns the task's records in append order.
func (m *MemLedger) Records(task string) ([]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Record, 0, len(m.byTask[task]))
	for _, i := range m.byTask[task] {
		out = append(out, m.all[i])
	}
	return out, nil
}

// All returns every record in append order.
func (m *MemLedger) All() []Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.all)
}

// FailWith makes every later Append fail with err (nil heals it).
func (m *MemLedger) FailWith(err error) {
	m.mu.Lock()
	m.fail = err
	m.mu.Unlock()
}

// Digester makes keyed digests of evidence: HMAC-SHA256 with the node key,
// truncated to 128 bits and hex-encoded (the same digest hooks attach to
// events, so a ledger record and an event about the same input agree).
type Digester struct{ key []byte }

// NewDigester returns a digester for key, which must not be empty.
func NewDigester(key []byte) (*Digester, error) {
	if len(key) == 0 {
		return nil, ErrNoKey
	}
	return &Digester{key: bytes.Clone(key)}, nil
}

// Digest returns the keyed digest of b, or "" for no evidence.
func (d *Digester) Digest(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	m := hmac.New(sha256.New, d.key)
	m.Write(b)
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// EncodeRecord writes r as one line of JSON.
func EncodeRecord(r Record) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("runtime: encode ledger record: %w", err)
	}
	return b, nil
}

// DecodeRecord reads one record written by EncodeRecord. It refuses
// another schema version, unknown fields, unknown kinds, missing task or
// time, digests that are not 32 hex digits, and records over
// MaxRecordBytes.
func DecodeRecord(b []byte) (Record, error) {
	var r Record
	if len(b) > MaxRecordBytes {
		return r, fmt.Errorf("%w: %d bytes, over %d", ErrBadRecord, len(b), MaxRecordBytes)
	}
	var probe struct {
		V *int `json:"v"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return r, fmt.Errorf("%w: %w", ErrBadRecord, err)
	}
	if probe.V == nil || *probe.V != RecordVersion {
		return r, fmt.Errorf("%w: want v %d", ErrRecordVersion, RecordVersion)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Record{}, fmt.Errorf("%w: %w", ErrBadRecord, err)
	}
	if dec.More() {
		return Record{}, fmt.Errorf("%w: trailing data", ErrBadRecord)
	}
	switch {
	case !recordKinds[r.Kind]:
		return Record{}, fmt.Errorf("%w: unknown kind %q", ErrBadRecord, r.Kind)
	case r.Task == "":
		return Record{}, fmt.Errorf("%w: no task", ErrBadRecord)
	case r.TS.IsZero():
		return Record{}, fmt.Errorf("%w: no ts", ErrBadRecord)
	case !isDigest(r.Input) || !isDigest(r.Output):
		return Record{}, fmt.Errorf("%w: evidence must be a keyed digest", ErrBadRecord)
	case r.State != "" && !validStates[r.State]:
		return Record{}, fmt.Errorf("%w: unknown state %q", ErrBadRecord, r.State)
	}
	return r, nil
}

func isDigest(s string) bool {
	if s == "" {
		return true
	}
	if len(s) != 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
