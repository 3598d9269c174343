package context

import (
	"slices"
	"testing"
)

// syncLog is a Store that logs whether each write was synced.
type syncLog struct {
	Store
	ops []string
}

func (s *syncLog) Put(k, v []byte) error { s.ops = append(s.ops, "put"); return s.Store.Put(k, v) }
func (s *syncLog) PutSync(k, v []byte) error {
	s.ops = append(s.ops, "sync")
	return s.Store.PutSync(k, v)
}

func (s *syncLog) take() []string { ops := s.ops; s.ops = nil; return ops }

// Open and Fork make their records durable with one sync, the last write;
// the Unsynced forms write the same records, in order, with none, and a
// later synced write makes them durable: a restart reads them back.
func TestOpenAndForkSyncOnceAndTheUnsyncedFormsLeaveItToTheCaller(t *testing.T) {
	dir := t.TempDir()
	ps := openPebble(t, dir)
	st := &syncLog{Store: ps}
	sp := NewSpace(st, Options{})
	steps := []struct {
		name string
		do   func() error
		want []string
	}{
		{"Open", func() error { _, err := sp.Open("s1", ""); return err }, []string{"sync"}},
		{"OpenUnsynced", func() error { _, err := sp.OpenUnsynced("s2", ""); return err }, []string{"put"}},
		{"Fork", func() error { _, err := sp.Fork("s3", "s1", UpToHead); return err }, []string{"put", "sync"}},
		{"ForkUnsynced", func() error { _, err := sp.ForkUnsynced("s4", "s1", UpToSystem); return err }, []string{"put", "put"}},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := st.take(); !slices.Equal(got, s.want) {
			t.Fatalf("%s wrote %q, want %q", s.name, got, s.want)
		}
	}
	if err := st.PutSync([]byte("x/caller"), []byte("{}")); err != nil { // the caller's synced write
		t.Fatal(err)
	}
	if err := ps.close(); err != nil {
		t.Fatal(err)
	}
	sp2 := NewSpace(openPebble(t, dir), Options{})
	for _, id := range []string{"s1", "s2", "s3", "s4"} {
		if _, err := sp2.Lookup(id); err != nil {
			t.Fatalf("after a restart, %s: %v", id, err)
		}
	}
}
