package gossip

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/clock"
)

func ent(id string) Entry { return Entry{SessionRow: &api.SessionRow{SessionId: id}} }

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// FuzzGossipHandler: deltas and blobs come from other machines; decoding
// them never panics and never lets a peer write another node's entries.
func FuzzGossipHandler(f *testing.F) {
	e := Entry{SessionRow: &api.SessionRow{SessionId: "s1", Activity: "working", TaskState: "active"}, Hash: "h"}
	d, _ := EncodeDelta(e)
	b, _ := json.Marshal(Blob{Node: "peer", At: 9, Entries: []Entry{e}, Versions: []uint64{3}})
	f.Add(d, b, "s1", uint64(1))
	f.Add([]byte("{"), []byte(`{"entries":[{}],"versions":[]}`), "", uint64(0))
	f.Fuzz(func(t *testing.T, delta, full []byte, key string, version uint64) {
		tab := NewTable()
		h := &Handler{Self: "me", Table: tab, Log: discard()}
		h.ApplyDelta("peer", key, version, delta)
		h.MergeRemoteState("peer", full)
		for _, node := range tab.Nodes() {
			if node != "peer" {
				t.Fatalf("a peer's message wrote entries for %q", node)
			}
		}
	})
}

func TestNewerVersionWins(t *testing.T) {
	tab := NewTable()
	if !tab.Apply("a", 2, Entry{SessionRow: &api.SessionRow{SessionId: "s", Task: "new"}}) {
		t.Fatal("first apply refused")
	}
	if tab.Apply("a", 1, Entry{SessionRow: &api.SessionRow{SessionId: "s", Task: "old"}}) {
		t.Fatal("an older version replaced a newer one")
	}
	if e, _ := tab.Get("a", "s"); e.Task != "new" {
		t.Fatalf("task %q", e.Task)
	}
}

func TestMergeDropsEntriesTheBlobNoLongerLists(t *testing.T) {
	tab := NewTable()
	tab.Apply("a", 5, ent("gone"))
	tab.Apply("a", 50, ent("newer-than-blob"))
	tab.Merge(Blob{Node: "a", At: 10, Entries: []Entry{ent("kept")}, Versions: []uint64{7}})
	if _, ok := tab.Get("a", "gone"); ok {
		t.Fatal("an entry older than the blob that it no longer lists stayed")
	}
	if _, ok := tab.Get("a", "newer-than-blob"); !ok {
		t.Fatal("an entry newer than the blob was dropped")
	}
	if tab.Version("a", "kept") != 7 {
		t.Fatal("the blob's entry was not applied at its version")
	}
	tab.DropNode("a")
	if len(tab.All()) != 0 {
		t.Fatal("DropNode left entries")
	}
}

func TestDigestIgnoresOrderAndEndedSessions(t *testing.T) {
	tab := NewTable()
	tab.Apply("a", 1, Entry{SessionRow: &api.SessionRow{SessionId: "x"}, Hash: "1"})
	tab.Apply("a", 1, Entry{SessionRow: &api.SessionRow{SessionId: "y"}, Hash: "2"})
	tab.Apply("a", 1, Entry{SessionRow: &api.SessionRow{SessionId: "z", Ended: true}, Hash: "3"})
	want := Digest([][2]string{{"y", "2"}, {"x", "1"}})
	if got := tab.Digest("a"); got != want {
		t.Fatalf("digest %s, want %s", got, want)
	}
}

func TestEncodeDeltaFitsOneFrame(t *testing.T) {
	long := strings.Repeat("ü", 4000)
	s := presence.State{SessionID: "s", Task: long, BlockerReason: long, Name: long,
		ActivitySource: long, EndReason: long, Claims: []string{long, long, long, long, long, long, long}}
	b, err := EncodeDelta(EntryOf(&s, "h"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > maxDeltaBytes {
		t.Fatalf("delta is %d bytes", len(b))
	}
	e, err := DecodeDelta(b)
	if err != nil || e.SessionId != "s" {
		t.Fatalf("decoded %+v %v", e, err)
	}
}

type recBroadcaster struct {
	mu   sync.Mutex
	keys []string
	vers []uint64
}

func (r *recBroadcaster) Broadcast(key string, version uint64, _ []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keys = append(r.keys, key)
	r.vers = append(r.vers, version)
	return nil
}

func TestPublisherSendsOneDeltaPerHashWithRisingVersions(t *testing.T) {
	clk := clock.NewFake(time.Unix(100, 0))
	out := &recBroadcaster{}
	p := NewPublisher(clk, discard(), out)
	s := presence.State{SessionID: "s"}
	p.Publish(&s, "h1")
	p.Publish(&s, "h1")
	p.Publish(&s, "h2") // same clock reading: the version still rises
	if len(out.keys) != 2 {
		t.Fatalf("broadcasts %v", out.keys)
	}
	if out.vers[1] <= out.vers[0] {
		t.Fatalf("versions %v do not rise", out.vers)
	}
	if v, ok := p.SentVersion("s"); !ok || v != out.vers[1] {
		t.Fatalf("sent version %d %v", v, ok)
	}
	b := p.Blob("me", []Entry{ent("s"), ent("never-sent")})
	if b.Versions[0] != out.vers[1] || b.Versions[1] != b.At {
		t.Fatalf("blob versions %v at %d", b.Versions, b.At)
	}
}

// TestBlobOverTheEntryBoundIsRefused: a peer's blob listing more than
// MaxBlobEntries entries is refused whole; one at the bound is merged.
func TestBlobOverTheEntryBoundIsRefused(t *testing.T) {
	mk := func(n int) []byte {
		b := Blob{Node: "peer", At: 1}
		for i := 0; i < n; i++ {
			b.Entries = append(b.Entries, ent("s"+strconv.Itoa(i)))
			b.Versions = append(b.Versions, 1)
		}
		out, _ := json.Marshal(b)
		return out
	}
	tab := NewTable()
	h := &Handler{Self: "me", Table: tab, Log: discard()}
	h.MergeRemoteState("peer", mk(MaxBlobEntries+1))
	if len(tab.All()) != 0 {
		t.Fatalf("a blob over the bound was merged: %d entries", len(tab.All()))
	}
	if err := CheckBlob(&Blob{Entries: make([]Entry, MaxBlobEntries+1)}); !errors.Is(err, ErrBlobTooLarge) {
		t.Fatalf("CheckBlob: %v", err)
	}
	h.MergeRemoteState("peer", mk(MaxBlobEntries))
	if len(tab.All()) != MaxBlobEntries {
		t.Fatalf("a blob at the bound merged %d entries", len(tab.All()))
	}
}
