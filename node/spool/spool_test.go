package spool

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/harn-dev/harn/presence"
)

func TestWriteThenPendingThenRead(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC)
	ev := presence.Event{ID: "a", SessionID: "s", Type: presence.TypeSessionStart, TS: now}
	p1, err := Write(dir, now, "a", Record{Events: []presence.Event{ev}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Write(dir, now.Add(time.Second), "b", Record{Diagnostic: &Diagnostic{TS: now, Error: "bad"}}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, tmpPrefix+"x.json"), []byte("half"), 0o600)
	files, err := Pending(dir)
	if err != nil || len(files) != 2 || files[0] != p1 {
		t.Fatalf("pending %v %v", files, err)
	}
	rec, err := Read(p1)
	if err != nil || len(rec.Events) != 1 || rec.Events[0].ID != "a" {
		t.Fatalf("read %+v %v", rec, err)
	}
	if err := Remove(p1); err != nil {
		t.Fatal(err)
	}
	if files, _ := Pending(dir); len(files) != 1 {
		t.Fatalf("after remove: %v", files)
	}
}

// FuzzRead: a spool file may be anything after a crash or a bad disk;
// reading never panics and an undecodable file is ErrCorrupt.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"events":[{"id":"a","session_id":"s","type":"tool.pre_use","ts":"2026-08-12T10:00:00.000Z"}]}`))
	f.Add([]byte(`{"diagnostic":{"error":"x"}}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "f.json")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		_, _ = Read(p)
	})
}
