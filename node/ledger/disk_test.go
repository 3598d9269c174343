package ledger

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harn-dev/harn/presence"
)

// mountTmpfs mounts a tmpfs of size bytes in a temp dir and unmounts it
// at cleanup. It needs root: it skips otherwise, except under CI=true,
// where a failure to mount fails the test.
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	ci := os.Getenv("CI") == "true"
	if os.Geteuid() != 0 && !ci {
		t.Skip("needs root to mount a small tmpfs (runs as root, and always under CI=true)")
	}
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("mount tmpfs at %s: %v: %s", dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fill writes a ballast file until the file system is full.
func fill(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "ballast")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill: %v", err)
			}
			break
		}
	}
	for n := len(buf) / 2; n > 0; n /= 2 { // the last partial blocks
		if _, err := f.Write(buf[:n]); err != nil {
			continue
		}
	}
	return p
}

// TestFullDiskRefusesWritesKeepsReadsAndRecovers runs the ledger on a real
// 8 MiB tmpfs that fills up: appends fail with ErrNoSpace and no panic,
// reads go on, Open on the full disk fails fast, and once the ballast is
// removed writes resume by themselves with every acknowledged event kept.
func TestFullDiskRefusesWritesKeepsReadsAndRecovers(t *testing.T) {
	mnt := mountTmpfs(t, 8<<20)
	dir := filepath.Join(mnt, "ledger")
	cfg := Config{Dir: dir, Logger: quietLogger(), MinFreeBytes: 1 << 20,
		RetryMin: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond, OpenTimeout: 5 * time.Second}
	l, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 2000)
	var acked []string
	ballast := ""
	var failure error
	for i := 0; i < 20000 && failure == nil; i++ {
		if i == 50 {
			ballast = fill(t, mnt)
		}
		e := ev("s", fmt.Sprint("e", i), i%60)
		e.SetAttr("pad", big)
		if _, err := l.Append([]presence.Event{e}); err != nil {
			failure = err
			break
		}
		acked = append(acked, e.ID)
	}
	if !errors.Is(failure, ErrNoSpace) || !errors.Is(failure, syscall.ENOSPC) {
		t.Fatalf("append on the full tmpfs after %d acks: %v", len(acked), failure)
	}
	t.Logf("%d appends acknowledged before the disk filled: %v", len(acked), failure)
	if evs, err := l.Session("s"); err != nil || len(evs) < len(acked) {
		t.Fatalf("read on the full disk: %d events, %v", len(evs), err)
	}
	// A second ledger dir on the full disk cannot open, and says so fast.
	start := time.Now()
	if _, err := Open(Config{Dir: filepath.Join(mnt, "other"), Logger: quietLogger(), MinFreeBytes: 1 << 20}); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("open on the full disk: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("open on the full disk took %s", d)
	}
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	waitWritable(t, l)
	if _, err := l.Append([]presence.Event{ev("s", "after", 1)}); err != nil {
		t.Fatalf("append after space returned: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, id := range append(acked, "after") {
		if ok, err := l.HasEvent(id); !ok || err != nil {
			t.Fatalf("acknowledged %s lost: %v", id, err)
		}
	}
}

// TestOpenOnReadOnlyDirEndsWithError: a ledger dir that does not take
// writes (a read-only mount: root ignores permission bits) makes Open
// fail at once with ErrUnwritable naming the cause, instead of hanging.
func TestOpenOnReadOnlyDirEndsWithError(t *testing.T) {
	mnt := mountTmpfs(t, 8<<20)
	dir := filepath.Join(mnt, "ledger")
	cfg := Config{Dir: dir, Logger: quietLogger(), MinFreeBytes: 1 << 20, OpenTimeout: 2 * time.Second}
	l, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append([]presence.Event{ev("s", "a", 1)}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if out, err := exec.Command("mount", "-o", "remount,ro", mnt).CombinedOutput(); err != nil {
		t.Fatalf("remount ro: %v: %s", err, out)
	}
	start := time.Now()
	_, err = Open(cfg)
	if !errors.Is(err, ErrUnwritable) || !errors.Is(err, syscall.EROFS) {
		t.Fatalf("open on a read-only dir: %v", err)
	}
	if d := time.Since(start); d > cfg.OpenTimeout+time.Second {
		t.Fatalf("open took %s", d)
	}
}
