package node

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/clockguard"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/raftstore"
	"github.com/harn-dev/harn/util/clock"
)

// checkPrivate fails for every directory under root that is not 0700 and
// every regular file or socket that is not 0600.
func checkPrivate(t *testing.T, root string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		var want fs.FileMode
		switch {
		case fi.IsDir():
			want = 0o700
		case fi.Mode().IsRegular(), fi.Mode()&fs.ModeSocket != 0:
			want = 0o600
		default:
			return nil
		}
		n++
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %04o, want %04o", p, got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 5 {
		t.Fatalf("walked %d entries under %s; the data dir looks empty", n, root)
	}
}

// TestDataDirTightenedToPrivateOnOpen: a data dir that exists as 0755 with
// a 0644 file in it (and a loose subdirectory) is 0700/0600 throughout
// after Open, and so is everything the node created in it under a 0022
// umask: the ledger's WAL and tables, the lock, the key, the spool and
// active dirs, the heartbeats.
func TestDataDirTightenedToPrivateOnOpen(t *testing.T) {
	old := unix.Umask(0o022)
	defer unix.Umask(old)
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(filepath.Join(dir, "old"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	for _, f := range []string{"notes.txt", "old/wal.log"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := testConfig(t, dir)
	cfg.Socket = filepath.Join(dir, "s.sock")
	n := openNode(t, cfg)
	mustIngest(t, n, ev("s", "1", presence.TypeUserPromptSubmit, 1, nil))
	n.proj.Flush()
	if _, err := os.Stat(HeartbeatPath(dir, "s")); err != nil {
		t.Fatalf("heartbeat: %v", err)
	}
	checkPrivate(t, dir)
}

// TestRaftDirPrivateWithTheMesh: with the mesh on, the raft store under the
// data dir (bolt log, snapshots) and the peers file are private too.
func TestRaftDirPrivateWithTheMesh(t *testing.T) {
	old := unix.Umask(0o022)
	defer unix.Umask(old)
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, dir)
	cc := &cfg.Cluster
	cc.Enabled, cc.Bind, cc.Server, cc.BootstrapExpect = true, "127.0.0.1", true, 1
	cc.GossipPort, cc.RaftPort, cc.RPCPort, cc.HTTPPort = 0, 0, 0, 0
	cc.MeshProfile, cc.RaftProfile = mesh.ProfileLocal, raftstore.ProfileFast
	n := openNode(t, cfg)
	n.Close()
	if _, err := os.Stat(filepath.Join(dir, "raft")); err != nil {
		t.Fatalf("no raft dir: %v", err)
	}
	checkPrivate(t, dir)
}

// TestSocketFallbackLivesInPrivateDir: a socket path too long for the data
// dir moves into $TMPDIR/harn-<uid>/, which the node makes 0700.
func TestSocketFallbackLivesInPrivateDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv("XDG_RUNTIME_DIR", "")
	long := filepath.Join(t.TempDir(), strings.Repeat("d", 120))
	sock := DefaultSocket(long)
	if filepath.Dir(sock) != PrivateSocketDir() || !strings.HasPrefix(sock, tmp) {
		t.Fatalf("fallback socket %s; want it inside %s", sock, PrivateSocketDir())
	}
	cfg := testConfig(t, long)
	cfg.Socket = sock
	openNode(t, cfg)
	fi, err := os.Lstat(filepath.Dir(sock))
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("socket dir %v (%v); want a 0700 directory", fi, err)
	}
	if err := CheckSocket(sock); err != nil {
		t.Fatalf("CheckSocket on the node's own socket: %v", err)
	}
}

// TestSocketDirNotOursOrOpenIsRefused: the private socket dir made first
// with a wider mode, or (as root) owned by another user, is refused; the
// node does not serve from it.
func TestSocketDirNotOursOrOpenIsRefused(t *testing.T) {
	cases := []struct {
		name  string
		setup func(dir string)
	}{
		{"mode 0755", func(dir string) { os.Chmod(dir, 0o755) }},
		{"mode 0777", func(dir string) { os.Chmod(dir, 0o777) }},
	}
	if os.Getuid() == 0 {
		cases = append(cases, struct {
			name  string
			setup func(dir string)
		}{"owned by nobody", func(dir string) { os.Chown(dir, 65534, 65534) }})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TMPDIR", t.TempDir())
			dir := PrivateSocketDir()
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			tc.setup(dir)
			cfg := testConfig(t, t.TempDir())
			cfg.Socket = filepath.Join(dir, "x.sock")
			n, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			err = n.Open()
			n.Close()
			var se *SocketError
			if !errors.As(err, &se) || !errors.Is(err, ErrSocketPermission) {
				t.Fatalf("Open: %v; want a *SocketError", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
			if _, err := os.Lstat(cfg.Socket); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the node made its socket in a refused dir: %v", err)
			}
		})
	}
}

// TestClientRefusesSquattedSocket: a client refuses, before connecting, a
// socket path that is a symlink or (as root) that another user made first.
func TestClientRefusesSquattedSocket(t *testing.T) {
	dir := t.TempDir()
	own := filepath.Join(dir, "own.sock")
	l, err := net.Listen("unix", own)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := CheckSocket(own); err != nil {
		t.Fatalf("own socket refused: %v", err)
	}
	if err := CheckSocket(filepath.Join(dir, "absent.sock")); err != nil {
		t.Fatalf("an absent socket is not a permission problem: %v", err)
	}
	link := filepath.Join(dir, "link.sock")
	if err := os.Symlink(own, link); err != nil {
		t.Fatal(err)
	}
	if err := CheckSocket(link); !errors.Is(err, ErrSocketPermission) {
		t.Fatalf("symlink: %v; want ErrSocketPermission", err)
	}
	c, err := net.Dial("unix", own)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := CheckPeer(own, c); err != nil {
		t.Fatalf("own peer refused: %v", err)
	}
	if os.Getuid() != 0 {
		t.Skip("needs root to make a socket owned by another user")
	}
	squat := filepath.Join(dir, "squat.sock")
	sl, err := net.Listen("unix", squat)
	if err != nil {
		t.Fatal(err)
	}
	defer sl.Close()
	if err := os.Chown(squat, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	err = CheckSocket(squat)
	if !errors.Is(err, ErrSocketPermission) || !strings.Contains(err.Error(), "uid 65534") {
		t.Fatalf("squatted socket: %v; want a refusal naming uid 65534", err)
	}
}

// TestSocketEACCESIsPermissionProblem: a connect that fails with EACCES is
// a *SocketError (a permission problem), not "no node".
func TestSocketEACCESIsPermissionProblem(t *testing.T) {
	err := DialPermission("/x.sock", &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.EACCES)})
	if !errors.Is(err, ErrSocketPermission) || !errors.Is(err, syscall.EACCES) {
		t.Fatalf("EACCES: %v; want ErrSocketPermission wrapping EACCES", err)
	}
	refused := &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	if err := DialPermission("/x.sock", refused); err != refused {
		t.Fatalf("ECONNREFUSED became %v", err)
	}
}

// TestNonUTF8SessionIDRefusedAtIngest: a session id that is not valid
// UTF-8 is refused with a one-line error naming the field; nothing is
// stored.
func TestNonUTF8SessionIDRefusedAtIngest(t *testing.T) {
	n := openNode(t, testConfig(t, t.TempDir()))
	for _, e := range []presence.Event{
		ev("bad\xff\xfeid", "1", presence.TypeUserPromptSubmit, 1, nil),
		{ID: "2", SessionID: "ok", ParentSessionID: "p\xc3", Type: presence.TypeSubagentStart, TS: t0, Agent: "claude-code"},
	} {
		_, err := n.Ingest([]presence.Event{e})
		if !errors.Is(err, presence.ErrInvalidEvent) || !strings.Contains(err.Error(), "UTF-8") || strings.Contains(err.Error(), "\n") {
			t.Fatalf("Ingest(%q): %v; want a one-line invalid-event error about UTF-8", e.SessionID, err)
		}
	}
	if got := n.Sessions(true); len(got) != 0 {
		t.Fatalf("stored %d sessions from refused events", len(got))
	}
}

// TestFutureEventStoredAtReceiptTime: one Gemini event dated 2100 is stored
// with the node's time, keeps its original as attrs.orig_ts, is flagged as
// a diagnostic; the session is not pinned `working` until 2100 (a later
// event moves it), and the reaper's end is stamped at the node's time.
func TestFutureEventStoredAtReceiptTime(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	fc := cfg.Clock.(*clock.Fake)
	procs := &fakeProcs{dead: map[int]bool{}}
	cfg.Procs = procs
	n := openNode(t, cfg)
	now := fc.Now().UTC()
	y2100 := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	pid := map[string]any{presence.AttrAgentPID: 4242, presence.AttrAgentStart: 99}
	mustIngest(t, n, presence.Event{ID: "g1", SessionID: "gem", Type: presence.TypeToolPreUse, TS: y2100, Agent: "gemini", Attrs: pid})
	st, err := n.Resolve("gem")
	if err != nil {
		t.Fatal(err)
	}
	if !st.LastEventAt.Equal(now) || st.Activity != presence.ActivityWorking {
		t.Fatalf("after a 2100 event: last event %v, activity %s; want %v, working", st.LastEventAt, st.Activity, now)
	}
	evs, err := n.ledger.Session("gem")
	if err != nil || len(evs) != 1 {
		t.Fatalf("ledger: %v %v", evs, err)
	}
	if got := evs[0].AttrString(clockguard.AttrOrigTS); got != presence.FormatTime(y2100) {
		t.Fatalf("orig_ts %q; want %q", got, presence.FormatTime(y2100))
	}
	ds, err := n.ledger.Diagnostics(10)
	if err != nil || len(ds) != 1 || ds[0].Source != "clock" || !strings.Contains(ds[0].Error, "2100-01-01") {
		t.Fatalf("diagnostics %+v (%v); want one clock diagnostic naming 2100", ds, err)
	}
	// A later, honest event moves the session: it is not pinned.
	fc.Advance(time.Second)
	mustIngest(t, n, presence.Event{ID: "g2", SessionID: "gem", Type: presence.TypeTurnStop, TS: fc.Now(), Agent: "gemini"})
	if st, _ = n.Resolve("gem"); st.Activity == presence.ActivityWorking {
		t.Fatalf("activity %s after turn.stop; the 2100 event still pins it", st.Activity)
	}
	fc.Advance(time.Minute)
	procs.mu.Lock()
	procs.dead[4242] = true
	procs.mu.Unlock()
	if got := n.keep.Reap(); got != 1 {
		t.Fatalf("reaped %d, want 1", got)
	}
	st, _ = n.Resolve("gem")
	if !st.Ended || !st.EndedAt.Equal(fc.Now().UTC()) {
		t.Fatalf("ended %v at %v; want ended at %v", st.Ended, st.EndedAt, fc.Now())
	}
	// The same event again (a hook's retry) is a duplicate: no second note.
	mustIngest(t, n, presence.Event{ID: "g1", SessionID: "gem", Type: presence.TypeToolPreUse, TS: y2100, Agent: "gemini"})
	if ds, _ := n.ledger.Diagnostics(10); len(ds) != 1 {
		t.Fatalf("%d diagnostics after a duplicate; want 1", len(ds))
	}
}

// TestUnixEpochTimestampIsValid: an event stamped exactly at the Unix epoch
// crosses the wire as that time and is stored, not refused as missing.
func TestUnixEpochTimestampIsValid(t *testing.T) {
	n := openNode(t, testConfig(t, t.TempDir()))
	e := presence.Event{ID: "e1", SessionID: "epoch", Type: presence.TypeUserPromptSubmit, TS: time.Unix(0, 0).UTC(), Agent: "claude-code"}
	back, err := wire.EventFromAPI(wire.EventToAPI(&e))
	if err != nil || !back.TS.Equal(time.Unix(0, 0)) || back.TS.IsZero() {
		t.Fatalf("epoch over the wire: %v (%v)", back.TS, err)
	}
	mustIngest(t, n, back)
	evs, err := n.ledger.Session("epoch")
	if err != nil || len(evs) != 1 || !evs[0].TS.Equal(time.Unix(0, 0)) {
		t.Fatalf("stored %v (%v); want one event at the epoch", evs, err)
	}
}
