package context

import (
	"bytes"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// pebbleStore is the tests' Store: a real Pebble in a temporary directory.
type pebbleStore struct {
	db     *pebble.DB
	closed bool
}

// close closes the db (a restart); the cleanup then leaves it.
func (p *pebbleStore) close() error { p.closed = true; return p.db.Close() }

func (p *pebbleStore) Put(k, v []byte) error     { return p.db.Set(k, v, pebble.NoSync) }
func (p *pebbleStore) PutSync(k, v []byte) error { return p.db.Set(k, v, pebble.Sync) }
func (p *pebbleStore) Scan(prefix []byte, fn func(k, v []byte) error) error {
	it, err := p.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: upper(prefix)})
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		if err := fn(it.Key(), v); err != nil {
			return err
		}
	}
	return it.Error()
}

func upper(p []byte) []byte {
	hi := bytes.Clone(p)
	for i := len(hi) - 1; i >= 0; i-- {
		if hi[i] < 0xff {
			hi[i]++
			return hi[:i+1]
		}
	}
	return nil
}

var _ Store = (*pebbleStore)(nil)

// openPebble opens a Pebble in dir (a new temp dir when empty).
func openPebble(tb testing.TB, dir string) *pebbleStore {
	tb.Helper()
	if dir == "" {
		dir = tb.TempDir()
	}
	db, err := pebble.Open(dir, &pebble.Options{Logger: quiet{}})
	if err != nil {
		tb.Fatal(err)
	}
	ps := &pebbleStore{db: db}
	tb.Cleanup(func() {
		if !ps.closed {
			_ = db.Close()
		}
	})
	return ps
}

type quiet struct{}

func (quiet) Infof(string, ...any)  {}
func (quiet) Errorf(string, ...any) {}
func (quiet) Fatalf(f string, a ...any) {
	panic(f)
}
