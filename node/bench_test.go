package node_test

// Benchmarks of the node beside bare Pebble, each in the same run (make
// bench); they report, they never fail on speed.
//
// BenchmarkIngest measures durable ingest through the node's socket. Both
// sides run interleaved: b.N events each, in alternating chunks (the side
// that goes first alternates too), so that the disk's drift over the run
// falls on both alike. It reports harn-events/s, bare-events/s and
// harn/bare.
//
// BenchmarkRestart10k measures a node restart over 10,000 sessions beside
// bare Pebble opening and scanning the same ledger.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/harn-dev/harn/node"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/presence/adapter/all"
	"github.com/harn-dev/harn/util/benchrun"
	"github.com/harn-dev/harn/util/ids"
	"github.com/harn-dev/harn/util/procinfo"
)

// benchWriters are the concurrencies measured: one hook at a time, a busy
// machine, a storm.
var benchWriters = []int{1, 8, 64}

// shortDir makes a temp dir with a short path (a unix socket path must stay
// under ~100 bytes; b.TempDir paths grow with the benchmark's name).
func shortDir(b *testing.B) string {
	b.Helper()
	d, err := os.MkdirTemp("", "hb")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// benchConfig is the daemon's default config (real clock, real process
// checks, reaper and spool loops, a lone machine's mesh with its Raft
// registry) on dir, with the cluster listeners on free ports so that a
// benchmark never collides with a node already running on this machine.
func benchConfig(dir string) node.Config {
	cfg := node.DefaultConfig()
	cfg.DataDir = dir
	cfg.Socket = filepath.Join(dir, "s.sock")
	cfg.Name = "buildbox"
	cfg.Logger = quietLogger()
	cfg.Cluster.GossipPort, cfg.Cluster.RaftPort, cfg.Cluster.RPCPort, cfg.Cluster.HTTPPort = 0, 0, 0, 0
	return cfg
}

// openBenchNode starts an in-process node on dir with benchConfig.
func openBenchNode(b *testing.B, dir string) *node.Node {
	b.Helper()
	n, err := node.New(benchConfig(dir))
	if err != nil {
		b.Fatal(err)
	}
	if err := n.Open(); err != nil {
		b.Fatal(err)
	}
	return n
}

// dialNode is what a client does: the local wire over the unix socket.
func dialNode(b *testing.B, sock string) (*api.Client, *api.Client) {
	b.Helper()
	cl, err := api.Dial(sock, 64<<20, nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := cl.Status(context.Background(), &api.StatusRequest{}); err != nil {
		b.Fatal(err)
	}
	return cl, cl
}

// hookEvents decodes a real Claude Code payload of the given native event
// for session with the claude-code adapter, stamped as the hook stamps it
// (this process as the agent).
func hookEvents(b *testing.B, native, session, extra string) []presence.Event {
	b.Helper()
	ad, ok := all.Lookup("claude-code")
	if !ok {
		b.Fatal("no claude-code adapter")
	}
	payload := `{"session_id":"` + session + `","transcript_path":"/home/ana/.claude/projects/-home-ana-shop/` + session +
		`.jsonl","cwd":"/home/ana/shop","permission_mode":"default","hook_event_name":"` + native + `"` + extra + `}`
	digest := func(p []byte) string { return fmt.Sprintf("%032x", len(p)) }
	res, err := ad.Decode(adapter.Input{Stdin: []byte(payload), Now: time.Now(), Digest: digest})
	if err != nil || len(res.Events) == 0 {
		b.Fatalf("decode %s: %v", native, err)
	}
	agent, err := procinfo.Self()
	if err != nil {
		b.Fatal(err)
	}
	for i := range res.Events {
		res.Events[i].SetAttr(presence.AttrAgentPID, agent.PID)
		res.Events[i].SetAttr(presence.AttrAgentStart, agent.Start)
	}
	return res.Events
}

const preToolUse = `,"tool_name":"Bash","tool_input":{"command":"go test ./...","description":"Run the tests"},"tool_use_id":"toolu_01ABCxyz"`

// quietPebble drops Pebble's logs; a fatal one still panics.
type quietPebble struct{}

func (quietPebble) Infof(string, ...any)         {}
func (quietPebble) Errorf(string, ...any)        {}
func (quietPebble) Fatalf(f string, args ...any) { panic(fmt.Sprintf(f, args...)) }

// ledgerKey has the shape of the ledger's event key.
func ledgerKey(session string, seq uint64) []byte {
	k := append([]byte{'e', 0}, session...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, seq)
}

// BenchmarkIngest: writers concurrent gRPC clients, each on its own
// connection and session (as concurrent hooks are), each Append carrying
// one tool.pre_use decoded from a real Claude Code PreToolUse payload;
// Append returns after the event is in a synced WAL. Beside it, bare Pebble
// with db.Set(k, v, pebble.Sync) of one key per event at the same
// concurrency, the value the size of the ledger's stored event.
func BenchmarkIngest(b *testing.B) {
	for _, writers := range benchWriters {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			dir := shortDir(b)
			n := openBenchNode(b, filepath.Join(dir, "n"))
			defer n.Close()
			db, err := pebble.Open(filepath.Join(dir, "bare"), &pebble.Options{FormatMajorVersion: pebble.FormatNewest, Logger: quietPebble{}})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()

			type writer struct {
				cl      *api.Client
				session string
				tmpl    *api.Event
				ids     *benchrun.IDGen
				seq     uint64
			}
			ws := make([]*writer, writers)
			ctx := context.Background()
			for i := range ws {
				conn, cl := dialNode(b, filepath.Join(dir, "n", "s.sock"))
				defer conn.Close()
				s := benchrun.Session(i)
				start := &api.AppendRequest{}
				for _, e := range hookEvents(b, "SessionStart", s, `,"source":"startup","model":"claude-sonnet-4-6"`) {
					e.ID = ids.New(time.Now())
					start.Events = append(start.Events, wire.EventToAPI(&e))
				}
				if _, err := cl.Append(ctx, start); err != nil {
					b.Fatal(err)
				}
				pre := hookEvents(b, "PreToolUse", s, preToolUse)[0]
				ws[i] = &writer{cl: cl, session: s, tmpl: wire.EventToAPI(&pre), ids: benchrun.NewIDGen()}
			}
			// The bare value is the size of what the ledger stores.
			stored := hookEvents(b, "PreToolUse", ws[0].session, preToolUse)[0]
			stored.ID, stored.Node, stored.Seq = ids.New(time.Now())+"1", n.Name(), 17 // the shape of an IDGen id
			stored.SetAttr(presence.AttrAgentPID, float64(os.Getpid()))
			val, err := json.Marshal(stored)
			if err != nil {
				b.Fatal(err)
			}

			benchrun.Interleave(b, writers, 1,
				&benchrun.Side{Name: "harn", Op: func(w int) error {
					wr := ws[w]
					t := wr.tmpl
					e := &api.Event{Id: wr.ids.Next(), SessionId: t.SessionId, Type: t.Type, Agent: t.Agent,
						TsUnixNano: time.Now().UnixNano(), AttrsJson: t.AttrsJson}
					_, err := wr.cl.Append(ctx, &api.AppendRequest{Events: []*api.Event{e}})
					return err
				}},
				&benchrun.Side{Name: "bare", Op: func(w int) error {
					wr := ws[w]
					wr.seq++
					return db.Set(ledgerKey(wr.session, wr.seq), val, pebble.Sync)
				}})
			b.ReportMetric(float64(len(val)), "value-bytes")
		})
	}
}

// restartSessions is the size of the restart benchmark.
const restartSessions = 10000

// BenchmarkRestart10k fills a node with 10,000 live sessions (three events
// each), then restarts it (Close, then New and Open: every session's state
// is folded again from the ledger and its heartbeat file rewritten) three
// times, each beside bare Pebble opening the same ledger, reading every key
// and value, and closing. It reports the median of each and the ratio.
func BenchmarkRestart10k(b *testing.B) {
	dir := shortDir(b)
	n := openBenchNode(b, dir)
	b.Cleanup(func() { n.Close() }) // the latest node; Close is idempotent
	t := time.Now()
	if err := node.Populate(n, restartSessions); err != nil {
		b.Fatal(err)
	}
	populated := time.Since(t)
	if err := n.Close(); err != nil {
		b.Fatal(err)
	}
	var restart, bare []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := 0; j < 3; j++ {
			t := time.Now()
			n = openBenchNode(b, dir)
			restart = append(restart, time.Since(t))
			if got := len(n.Sessions(false)); got != restartSessions {
				b.Fatalf("after restart %d live sessions, want %d", got, restartSessions)
			}
			if err := n.Close(); err != nil {
				b.Fatal(err)
			}
			t = time.Now()
			keys, err := bareScan(filepath.Join(dir, "ledger"))
			if err != nil {
				b.Fatal(err)
			}
			bare = append(bare, time.Since(t))
			if keys < 3*restartSessions {
				b.Fatalf("bare scan read %d keys", keys)
			}
		}
	}
	b.StopTimer()
	slices.Sort(restart)
	slices.Sort(bare)
	med := func(ds []time.Duration) float64 { return float64(ds[len(ds)/2]) / float64(time.Millisecond) }
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(populated.Seconds(), "populate-s")
	b.ReportMetric(med(restart), "restart-ms")
	b.ReportMetric(med(bare), "bare-open-scan-ms")
	b.ReportMetric(med(restart)/med(bare), "restart/bare")
}

// bareScan opens a Pebble directory, reads every key and value, and closes
// it: the floor under a node's rebuild.
func bareScan(dir string) (int, error) {
	db, err := pebble.Open(dir, &pebble.Options{FormatMajorVersion: pebble.FormatNewest, Logger: quietPebble{}})
	if err != nil {
		return 0, err
	}
	it, err := db.NewIter(nil)
	if err != nil {
		db.Close()
		return 0, err
	}
	keys := 0
	for it.First(); it.Valid(); it.Next() {
		if _, err := it.ValueAndErr(); err != nil {
			it.Close()
			db.Close()
			return 0, err
		}
		keys++
	}
	if err := it.Close(); err != nil {
		db.Close()
		return 0, err
	}
	return keys, db.Close()
}

// TestRestartRewritesOnlyStaleHeartbeats guards the restart shortcut that
// BenchmarkRestart10k measures: a heartbeat file that already holds exactly
// what the node would write is left alone, and any other (changed content,
// another mode, a symlink) is rewritten as a regular 0600 file.
func TestRestartRewritesOnlyStaleHeartbeats(t *testing.T) {
	dir, err := os.MkdirTemp("", "hb")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	open := func() *node.Node {
		cfg := benchConfig(dir)
		cfg.ReapInterval, cfg.SpoolInterval = time.Hour, time.Hour
		cfg.Cluster.Enabled = false
		n, err := node.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Open(); err != nil {
			t.Fatal(err)
		}
		return n
	}
	n := open()
	ts := time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC)
	sessions := []string{"same", "edited", "chmodded", "symlinked"}
	for i, s := range sessions {
		if _, err := n.Ingest([]presence.Event{
			{ID: fmt.Sprintf("a%d", i), SessionID: s, Type: presence.TypeSessionStart, TS: ts, Agent: "claude-code"},
			{ID: fmt.Sprintf("b%d", i), SessionID: s, Type: presence.TypeToolPreUse, TS: ts.Add(time.Second), Agent: "claude-code",
				Attrs: map[string]any{presence.AttrTool: "Bash"}},
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	for _, s := range sessions {
		b, err := os.ReadFile(node.HeartbeatPath(dir, s))
		if err != nil {
			t.Fatal(err)
		}
		want[s] = b
	}
	sameBefore, err := os.Stat(node.HeartbeatPath(dir, "same"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(node.HeartbeatPath(dir, "edited"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(node.HeartbeatPath(dir, "chmodded"), 0o600); err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(dir, "elsewhere.json")
	if err := os.WriteFile(elsewhere, want["symlinked"], 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(node.HeartbeatPath(dir, "symlinked"))
	if err := os.Symlink(elsewhere, node.HeartbeatPath(dir, "symlinked")); err != nil {
		t.Fatal(err)
	}

	n = open()
	defer n.Close()
	for _, s := range sessions {
		p := node.HeartbeatPath(dir, s)
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: heartbeat mode %v, want a regular 0600 file", s, fi.Mode())
		}
		if b, _ := os.ReadFile(p); !bytes.Equal(b, want[s]) {
			t.Errorf("%s: heartbeat after restart\n%s\nwant\n%s", s, b, want[s])
		}
	}
	if sameAfter, err := os.Stat(node.HeartbeatPath(dir, "same")); err != nil || !os.SameFile(sameBefore, sameAfter) {
		t.Errorf("an up-to-date heartbeat was rewritten at restart (%v)", err)
	}
}
