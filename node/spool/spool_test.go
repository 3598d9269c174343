package spool

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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

// TestWriteToUnwritableDirSaysWhatWasLost: a spool dir that cannot be
// made yields a *WriteError naming the lost events.
func TestWriteToUnwritableDirSaysWhatWasLost(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(parent, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC)
	rec := Record{Events: []presence.Event{{ID: "a"}, {ID: "b"}}}
	_, err := Write(filepath.Join(parent, "spool"), now, "a", rec)
	var we *WriteError
	if !errors.Is(err, ErrUnwritable) || errors.Is(err, ErrNoSpace) || !errors.As(err, &we) {
		t.Fatalf("write: %v", err)
	}
	if we.Step != "mkdir" || len(we.EventIDs) != 2 || we.EventIDs[1] != "b" || !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("write error %+v", we)
	}
}

// TestWriteOnFullDiskIsNoSpaceAndLeavesNothing: on a full tmpfs the
// write fails with ErrNoSpace and no temp file is left behind. It needs
// root (always runs under CI=true).
func TestWriteOnFullDiskIsNoSpaceAndLeavesNothing(t *testing.T) {
	if os.Geteuid() != 0 && os.Getenv("CI") != "true" {
		t.Skip("needs root to mount a small tmpfs (runs as root, and always under CI=true)")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	dir := filepath.Join(mnt, "spool")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(mnt, "ballast"))
	if err != nil {
		t.Fatal(err)
	}
	for buf := make([]byte, 4096); ; {
		if _, err := f.Write(buf); err != nil {
			break
		}
	}
	f.Close()
	now := time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC)
	big := presence.Event{ID: "a", SessionID: "s", Type: presence.TypeSessionStart, TS: now}
	big.SetAttr("pad", strings.Repeat("x", 8192))
	_, err = Write(dir, now, "a", Record{Events: []presence.Event{big}})
	var we *WriteError
	if !errors.Is(err, ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) || !errors.As(err, &we) || we.EventIDs[0] != "a" {
		t.Fatalf("write on a full disk: %v", err)
	}
	if !strings.HasPrefix(err.Error(), "spool: disk full: 1 events lost") {
		t.Fatalf("message %q", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left behind: %v", ents)
	}
}
