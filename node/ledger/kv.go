package ledger

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// pfxKV is the prefix of named keyspaces: k\x00<space>\x00<key> -> value.
const pfxKV = 'k'

// ErrBadSpace refuses a keyspace name that is empty or holds NUL.
var ErrBadSpace = errors.New("ledger: bad keyspace name")

func kvPrefix(space string) ([]byte, error) {
	if space == "" || bytes.IndexByte([]byte(space), 0) >= 0 {
		return nil, fmt.Errorf("%w %q", ErrBadSpace, space)
	}
	p := make([]byte, 0, len(space)+3)
	p = append(p, pfxKV, 0)
	p = append(p, space...)
	return append(p, 0), nil
}

// PutKV stores val under key in the named keyspace, for a room of the node
// that keeps its own records next to the events (the task runtimes'
// ledger). The write goes to Pebble's WAL without an fsync: a machine
// crash, or a kill -9 before the WAL writer flushed it (milliseconds), can
// lose the last writes. It fails
// fast while the ledger is unwritable.
func (l *Ledger) PutKV(space string, key, val []byte) error {
	return l.putKV(space, key, val, pebble.NoSync)
}

// PutKVSync is PutKV with an fsync of the WAL before it returns: for the
// rare records whose loss would weaken a rule (an unknown outcome that
// holds mutations until an acknowledgement), which a kill -9 right after
// the write must not lose either.
func (l *Ledger) PutKVSync(space string, key, val []byte) error {
	return l.putKV(space, key, val, pebble.Sync)
}

func (l *Ledger) putKV(space string, key, val []byte, opt *pebble.WriteOptions) error {
	p, err := kvPrefix(space)
	if err != nil {
		return err
	}
	db, err := l.beginWrite()
	if err != nil {
		return err
	}
	err = l.write(func() error { return db.Set(append(p, key...), val, opt) })
	l.endWrite()
	if err != nil {
		l.markUnwritable(err)
		return fmt.Errorf("ledger: put: %w", err)
	}
	return nil
}

// DeleteKV removes key from the named keyspace without an fsync (as
// PutKV writes). Removing a missing key is not an error.
func (l *Ledger) DeleteKV(space string, key []byte) error {
	return l.deleteKV(space, key, pebble.NoSync)
}

// DeleteKVSync removes key from the named keyspace, with an fsync of the
// WAL before it returns (a record that is gone must stay gone across a
// kill -9, or a rebuild would bring it back). Removing a missing key is
// not an error.
func (l *Ledger) DeleteKVSync(space string, key []byte) error {
	return l.deleteKV(space, key, pebble.Sync)
}

func (l *Ledger) deleteKV(space string, key []byte, opt *pebble.WriteOptions) error {
	p, err := kvPrefix(space)
	if err != nil {
		return err
	}
	db, err := l.beginWrite()
	if err != nil {
		return err
	}
	err = l.write(func() error { return db.Delete(append(p, key...), opt) })
	l.endWrite()
	if err != nil {
		l.markUnwritable(err)
		return fmt.Errorf("ledger: delete: %w", err)
	}
	return nil
}

// ScanKV calls fn with each key (without the keyspace's prefix) and value
// of the named keyspace that starts with prefix, in key order. The slices
// are valid only during the call.
func (l *Ledger) ScanKV(space string, prefix []byte, fn func(key, val []byte) error) error {
	p, err := kvPrefix(space)
	if err != nil {
		return err
	}
	lo := append(p, prefix...)
	hi := upperBound(lo)
	return l.scan(lo, hi, func(k, v []byte) error { return fn(k[len(p):], v) })
}

// upperBound is the smallest key greater than every key starting with p.
func upperBound(p []byte) []byte {
	hi := bytes.Clone(p)
	for i := len(hi) - 1; i >= 0; i-- {
		if hi[i] < 0xff {
			hi[i]++
			return hi[:i+1]
		}
	}
	return nil
}
