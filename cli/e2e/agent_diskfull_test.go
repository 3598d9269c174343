package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
)

// smallDisk mounts a tmpfs of size bytes and unmounts it at cleanup. It
// needs root: it skips otherwise, except under CI=true, where a failure to
// mount fails the test.
func smallDisk(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 && os.Getenv("CI") != "true" {
		t.Skip("needs root to mount a small tmpfs (runs as root, and always under CI=true)")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0700", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs at %s: %v: %s", dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// ballast fills dir's file system, leaving about leave bytes free.
func ballast(t *testing.T, dir string, leave int64) string {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	p := filepath.Join(dir, "ballast")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for n := int64(0); n < free-leave; n += int64(len(buf)) {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			t.Fatal(err)
		}
	}
	return p
}

// TestAFullDiskDuringAnAskRefusesTheWriteAndKeepsTheNodeUp: the node's
// data dir is on a small tmpfs with little room left. harn ask runs a
// step whose shell prints 3 MiB, again and again, so that the context's
// unsynced 64 KiB chunks and the ledger's records fill the disk. A full
// disk used to crash the node (a Pebble WAL rotation panic, then "fatal
// error: sync: unlock of unlocked mutex"). Now the turn ends failed
// saying the write was refused, the node answers `harn node status` and
// reads (`harn task show`), and once the ballast is gone a new ask
// succeeds on the same node.
func TestAFullDiskDuringAnAskRefusesTheWriteAndKeepsTheNodeUp(t *testing.T) {
	disk := smallDisk(t, 96<<20)
	e := newEnv(t)
	e.dataDir = filepath.Join(disk, "data")
	n := e.spawn(append(append([]string(nil), e.base...), "HARN_TASK_GRACE=2s"), "node", "--data-dir", e.dataDir, "--socket", e.socket)
	e.waitReady(n)
	ball := ballast(t, disk, 20<<20) // the ledger wants 8 MiB free to take writes
	// each step: 3 MiB of text in 768 deltas beside a tool call (the loop
	// keeps going), so that the context, the session's stored events (one
	// unsynced write a delta) and the ledger grow by MiBs a step
	m := modeltest.New(t)
	big := modeltest.Calls(true, modeltest.Call{ID: "c1", Name: "shell", Args: `{"command":"true"}`})
	delta := modeltest.Chunk(`{"content":`+modeltest.JS(strings.Repeat("d", 4<<10))+`}`, "")
	var text []string
	for range 768 {
		text = append(text, delta)
	}
	big.Chunks = append(text, big.Chunks...)
	m.SetFallback(func(map[string]any) modeltest.Reply { return big })
	r := runIn(t, append(e.hookEnv(), "HARN_PROVIDER_KEY=k"), t.TempDir(), modelArgs(m, "--profile", "full", "fill the disk")...)
	if n.exited() {
		b, _ := os.ReadFile(n.log)
		t.Fatalf("the node died on the full disk: %s", tail(string(b), 3000))
	}
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, "disk full") {
		t.Fatalf("the ask on a full disk: %v; want it to fail saying the disk is full", r)
	}
	if _, ok := e.nodeStatus(); !ok {
		t.Fatal("the node does not answer harn node status on the full disk")
	}
	if out := e.harn("", "agents", "list", "--all", "--json"); out.code != 0 {
		t.Fatalf("reads on the full disk: %v", out)
	}
	t.Logf("on the full disk, after %d model requests: %s", len(m.Requests()), strings.TrimSpace(r.stdout))
	if err := os.Remove(ball); err != nil {
		t.Fatal(err)
	}
	ok := modeltest.New(t, modeltest.Text("space is back"))
	eventually(t, stateTimeout, "an ask succeeds once space returned", func() (bool, string) {
		ok.Add(modeltest.Text("space is back"))
		r := runIn(t, append(e.hookEnv(), "HARN_PROVIDER_KEY=k"), t.TempDir(), modelArgs(ok, "hello")...)
		return r.code == 0 && strings.TrimSpace(r.stdout) == "space is back", r.String()
	})
	if n.exited() {
		t.Fatal("the node exited")
	}
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
