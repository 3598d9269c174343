package context

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Store is the storage the room needs: append-only records by key, a scan
// by key prefix, and a write that is durable when it returns. The room
// never overwrites nor deletes a key. In production it is the node's
// Pebble (a keyspace of its ledger); the package's tests open a real
// Pebble in a temporary directory.
type Store interface {
	// Put writes a record; it may be lost by a crash until a later
	// PutSync returns (writes are ordered: a sync covers every earlier
	// write).
	Put(key, val []byte) error
	// PutSync writes a record and makes it, and every earlier write,
	// durable before it returns.
	PutSync(key, val []byte) error
	// Scan calls fn with each key and value starting with prefix, in key
	// order; the slices are valid only during the call.
	Scan(prefix []byte, fn func(key, val []byte) error) error
}

// Sentinels of this package. Match them with errors.Is.
var (
	ErrBadID     = errors.New("context: bad session or lane id")
	ErrNoSession = errors.New("context: no such session")
	ErrExists    = errors.New("context: the session already has a context")
	ErrNoRef     = errors.New("context: no such output reference")
	ErrBadRange  = errors.New("context: byte range outside the output")
	ErrCorrupt   = errors.New("context: a stored record does not decode")
	ErrClosed    = errors.New("context: the store refused the write")
)

// Key layout. Every key of a tree starts with "t/<tree>/"; a session maps
// to its tree and lane under "s/<session>".
//
//	s/<session>                     -> sessionRec
//	t/<tree>/n/<seq:8 bytes BE>     -> itemRec (history: messages, instructions, checkpoints, lanes, budgets)
//	t/<tree>/b/<seq:8>/<chunk:4>    -> bytes of an externalised tool output
const maxID = 128

func checkID(id string) error {
	if id == "" || len(id) > maxID || strings.ContainsAny(id, "/\x00") {
		return fmt.Errorf("%w %q", ErrBadID, id)
	}
	return nil
}

func sessionKey(session string) []byte { return []byte("s/" + session) }

func treePrefix(tree string) []byte { return []byte("t/" + tree + "/") }

func itemPrefix(tree string) []byte { return append(treePrefix(tree), 'n', '/') }

func itemKey(tree string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(itemPrefix(tree), seq)
}

func blobPrefix(tree string, seq uint64) []byte {
	k := append(treePrefix(tree), 'b', '/')
	k = binary.BigEndian.AppendUint64(k, seq)
	return append(k, '/')
}

func blobKey(tree string, seq uint64, chunk uint32) []byte {
	return binary.BigEndian.AppendUint32(blobPrefix(tree, seq), chunk)
}

// Ref is the reference of an externalised tool output, as the model sees
// it: "out-" and the item's sequence number in hex.
func refOf(seq uint64) string { return fmt.Sprintf("out-%x", seq) }

func parseRef(ref string) (uint64, error) {
	s, ok := strings.CutPrefix(strings.TrimSpace(ref), "out-")
	if !ok || s == "" || len(s) > 16 {
		return 0, fmt.Errorf("%w: %q", ErrNoRef, ref)
	}
	b, err := hex.DecodeString(strings.Repeat("0", len(s)%2) + s)
	if err != nil {
		return 0, fmt.Errorf("%w: %q", ErrNoRef, ref)
	}
	var seq uint64
	for _, c := range b {
		seq = seq<<8 | uint64(c)
	}
	return seq, nil
}
