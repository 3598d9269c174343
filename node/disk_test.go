package node

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"google.golang.org/grpc/codes"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/ledger"
	"github.com/harn-dev/harn/presence"
)

// fullDisk fails every write-side operation with ENOSPC while on.
type fullDisk struct{ on atomic.Bool }

func (f *fullDisk) MaybeError(op errorfs.Op) error {
	if !f.on.Load() || op.Kind.ReadOrWrite() != errorfs.OpIsWrite ||
		op.Kind == errorfs.OpLock || op.Kind == errorfs.OpFileClose || op.Kind == errorfs.OpRemove {
		return nil
	}
	return &os.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
}

func (f *fullDisk) String() string { return "fullDisk" }

func localClient(t testing.TB, n *Node) *api.Client { return dialClient(t, n.cfg.Socket) }

// dialClient is a client of the node on sock over the local wire, as harn
// makes one; the test's end closes it.
func dialClient(t testing.TB, sock string) *api.Client {
	t.Helper()
	cl, err := api.Dial(sock, 64<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

func appendReq(n *Node, session, id, typ string) *api.AppendRequest {
	e := at(n, session, id, typ, nil)
	return &api.AppendRequest{Events: []*api.Event{wire.EventToAPI(&e)}}
}

// waitUntil polls cond, bounded by d.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFullDiskRefusesWritesAndKeepsServingReads: on a full disk the node
// refuses an append with ResourceExhausted (a hook spools it), `agents
// list` still answers, writes resume by themselves once the disk takes
// them, and a heartbeat write that failed meanwhile is redone.
func TestFullDiskRefusesWritesAndKeepsServingReads(t *testing.T) {
	disk := &fullDisk{}
	cfg := testConfig(t, t.TempDir())
	cfg.ProjectDelay = 0
	cfg.ledgerTune = func(c *ledger.Config) {
		c.FS = errorfs.Wrap(vfs.Default, disk)
		c.RetryMin, c.RetryMax, c.MinFreeBytes = 5*time.Millisecond, 20*time.Millisecond, -1
	}
	n := openNode(t, cfg)
	cl := localClient(t, n)
	ctx := context.Background()
	if _, err := cl.Append(ctx, appendReq(n, "s", "1", presence.TypeUserPromptSubmit)); err != nil {
		t.Fatal(err)
	}
	// The heartbeat of the next event cannot be written (its directory
	// is gone, as on a disk that refuses writes).
	// The first event's heartbeat is written first (the projector writes
	// it in the background), so that nothing lands in the dir as it goes.
	n.proj.Flush()
	active := ActiveDir(cfg.DataDir)
	var rmErr error
	for range 50 { // bounded: a write in flight may still land once
		if rmErr = os.RemoveAll(active); rmErr == nil {
			break
		}
		n.proj.Flush()
	}
	if rmErr != nil {
		t.Fatal(rmErr)
	}
	if _, err := cl.Append(ctx, appendReq(n, "s", "2", presence.TypeInputRequested)); err != nil {
		t.Fatal(err)
	}
	n.proj.Flush()

	disk.on.Store(true)
	_, err := cl.Append(ctx, appendReq(n, "s", "3", presence.TypeToolPreUse))
	if api.Code(err) != codes.ResourceExhausted {
		t.Fatalf("append on a full disk: %v, want ResourceExhausted", err)
	}
	if !errors.Is(n.ledger.Writable(), ledger.ErrNoSpace) {
		t.Fatalf("ledger writable: %v", n.ledger.Writable())
	}
	for range 3 {
		res, err := cl.List(ctx, &api.ListRequest{})
		if err != nil || len(res.Rows) != 1 {
			t.Fatalf("agents list while writes are refused: %v (%d rows)", err, len(res.GetRows()))
		}
	}
	if st, err := n.Resolve("s"); err != nil || st.Activity != presence.ActivityNeedsInput {
		t.Fatalf("state while refused: %v %v", st.Activity, err)
	}

	if err := os.MkdirAll(active, 0o700); err != nil {
		t.Fatal(err)
	}
	disk.on.Store(false)
	n.ledger.Retry()
	waitUntil(t, 10*time.Second, "writes to resume", func() bool { n.ledger.Retry(); return n.ledger.Writable() == nil })
	waitUntil(t, 10*time.Second, "the failed heartbeat to be redone", func() bool {
		_, err := os.Stat(HeartbeatPath(cfg.DataDir, "s"))
		return err == nil
	})
	b, _ := os.ReadFile(HeartbeatPath(cfg.DataDir, "s"))
	if !strings.Contains(string(b), `"needs_input"`) {
		t.Fatalf("redone heartbeat %s", b)
	}
	if _, err := cl.Append(ctx, appendReq(n, "s", "3", presence.TypeToolPreUse)); err != nil {
		t.Fatalf("append after the disk recovered: %v", err)
	}
}

// wedgedLock blocks the ledger's directory lock until released, then
// fails it, as a store that never opens.
type wedgedLock struct {
	blocked chan struct{}
	release chan struct{}
	once    atomic.Bool
}

func (w *wedgedLock) MaybeError(op errorfs.Op) error {
	if op.Kind != errorfs.OpLock {
		return nil
	}
	if w.once.CompareAndSwap(false, true) {
		close(w.blocked)
	}
	<-w.release
	return errors.New("wedged")
}

func (w *wedgedLock) String() string { return "wedgedLock" }

// TestOpenEndsWhenItsContextEnds: a ledger open that never returns does
// not hold the node's start: the signal's cancel ends Open at once, with
// everything it opened closed.
func TestOpenEndsWhenItsContextEnds(t *testing.T) {
	w := &wedgedLock{blocked: make(chan struct{}), release: make(chan struct{})}
	defer close(w.release) // lets the abandoned open finish
	cfg := testConfig(t, t.TempDir())
	cfg.ledgerTune = func(c *ledger.Config) {
		c.FS = errorfs.Wrap(vfs.Default, w)
		c.OpenTimeout, c.MinFreeBytes = time.Minute, -1
	}
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.OpenContext(ctx) }()
	select {
	case <-w.blocked:
	case <-time.After(10 * time.Second):
		t.Fatal("the ledger open never reached its lock")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("open: %v, want context.Canceled", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Open did not end within 2 s of its context")
	}
	if _, err := os.Stat(cfg.Socket); err == nil {
		t.Fatal("a socket is left after the failed open")
	}
}
