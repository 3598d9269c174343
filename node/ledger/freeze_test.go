package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// writeMix runs writers goroutines that each put n values of 64 KiB
// without a sync (a context's tool outputs) and a synced record every
// tenth (the runtime's records); start is called by writer 0 after its
// tenth put. It returns the synced keys acknowledged.
func writeMix(l *Ledger, writers, n int, start func()) []string {
	val := bytes.Repeat([]byte("x"), 64<<10)
	var (
		mu    sync.Mutex
		acked []string
		wg    sync.WaitGroup
	)
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				if g == 0 && i == 10 {
					start()
				}
				_ = l.PutKV("ctx", fmt.Appendf(nil, "b/%d/%d", g, i), val)
				if i%10 == 0 {
					k := fmt.Sprintf("s/%d/%d", g, i)
					if l.PutKVSync("ctx", []byte(k), []byte("y")) == nil {
						mu.Lock()
						acked = append(acked, k)
						mu.Unlock()
					}
				}
			}
		}()
	}
	wg.Wait()
	return acked
}

// checkAcked fails unless every acknowledged synced key reads back.
func checkAcked(t *testing.T, l *Ledger, acked []string) {
	t.Helper()
	got := map[string]bool{}
	if err := l.ScanKV("ctx", []byte("s/"), func(k, _ []byte) error { got[string(k)] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	for _, k := range acked {
		if !got[k] {
			t.Fatalf("acknowledged synced key %s is gone", k)
		}
	}
}

// TestAWALFaultDuringMemtableRotationNeverCrashesTheProcess: the WAL
// fails with ENOSPC while four writers fill memtables with unsynced 64 KiB
// values. Pebble keeps a failed WAL write and panics at the next memtable
// rotation with its mutex released ("fatal error: sync: unlock of
// unlocked mutex", which no recover stops); the ledger must freeze the
// store before Pebble sees the error. The process goes on, writes are
// refused with ErrNoSpace, reads answer, writes resume when the disk takes
// them, and every acknowledged synced write is there after a reopen.
func TestAWALFaultDuringMemtableRotationNeverCrashesTheProcess(t *testing.T) {
	for round := range 5 { // the rotation races the fault: several rounds
		f := &diskFault{match: func(p string) bool { return strings.HasSuffix(p, ".log") }}
		cfg := faultConfig(t, f)
		l, err := Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		acked := writeMix(l, 4, 300, func() { f.on.Store(true) })
		err = l.PutKVSync("ctx", []byte("after"), []byte("z"))
		if !errors.Is(err, ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("round %d: a write on the full disk: %v (faults %d)", round, err, f.hits.Load())
		}
		checkAcked(t, l, acked)
		f.on.Store(false)
		waitWritable(t, l)
		if err := l.PutKVSync("ctx", []byte("s/after"), []byte("z")); err != nil {
			t.Fatalf("round %d: a write once the disk takes writes: %v", round, err)
		}
		acked = append(acked, "s/after")
		if err := l.Close(); err != nil {
			t.Fatalf("round %d: close: %v", round, err)
		}
		if l, err = Open(cfg); err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		checkAcked(t, l, acked)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAFullTmpfsDuringLargeUnsyncedWritesNeverCrashesTheProcess is the
// same on a real 16 MiB tmpfs that fills up: the process goes on, reads
// answer, and once the ballast is gone writes resume with every
// acknowledged synced write kept.
func TestAFullTmpfsDuringLargeUnsyncedWritesNeverCrashesTheProcess(t *testing.T) {
	for range 4 { // the rotation races the fault: several rounds
		fullTmpfsRound(t)
	}
}

func fullTmpfsRound(t *testing.T) {
	mnt := mountTmpfs(t, 16<<20)
	fast := faultConfig(t, &diskFault{})
	cfg := Config{Dir: filepath.Join(mnt, "ledger"), Logger: quietLogger(), MinFreeBytes: 1 << 20,
		RetryMin: fast.RetryMin, RetryMax: fast.RetryMax, OpenTimeout: fast.OpenTimeout}
	l, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var ballast string
	acked := writeMix(l, 4, 400, func() { ballast = fill(t, mnt) })
	if err := l.Writable(); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("after filling the disk: writable %v", err)
	}
	checkAcked(t, l, acked)
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	waitWritable(t, l)
	if err := l.PutKVSync("ctx", []byte("s/after"), []byte("z")); err != nil {
		t.Fatalf("a write once space returned: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l, err = Open(cfg); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	checkAcked(t, l, append(acked, "s/after"))
}
