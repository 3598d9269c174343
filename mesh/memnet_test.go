package mesh

import (
	"bytes"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hashicorp/memberlist"
)

// quietList is a memberlist on net that sends only what it is asked to:
// no probes, gossip or periodic push/pull.
func quietList(t *testing.T, net *MemNetwork, name string, compress bool) (*memberlist.Memberlist, *MemTransport) {
	t.Helper()
	tr := net.NewTransport()
	c := memberlist.DefaultLocalConfig()
	c.Name, c.Transport, c.LogOutput = name, tr, io.Discard
	c.ProbeInterval, c.GossipInterval, c.PushPullInterval = 0, 0, 0
	c.EnableCompression = compress
	l, err := memberlist.Create(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Shutdown() })
	return l, tr
}

// sentSizes is what the transports count for b's join to a, then for
// each payload b sends a as a packet and as a stream message.
func sentSizes(t *testing.T, emulate bool, payloads [][]byte) []int64 {
	t.Helper()
	net := &MemNetwork{}
	if emulate {
		net.EmulateCompression()
	}
	_, ta := quietList(t, net, "a", !emulate)
	b, tb := quietList(t, net, "b", !emulate)
	total := func() int64 { return ta.SentBytes() + tb.SentBytes() }
	var out []int64
	before := total()
	if _, err := b.Join([]string{ta.Addr()}); err != nil {
		t.Fatal(err)
	}
	out = append(out, total()-before)
	// b merged a's state before its Join returned (a merges b's after
	// its reply): b sends.
	var to *memberlist.Node
	for _, m := range b.Members() {
		if m.Name == "a" {
			to = m
		}
	}
	if to == nil {
		t.Fatal("b does not list a after its join")
	}
	for _, p := range payloads {
		before = total()
		if err := b.SendBestEffort(to, p); err != nil {
			t.Fatal(err)
		}
		out = append(out, total()-before)
		before = total()
		if err := b.SendReliable(to, p); err != nil {
			t.Fatal(err)
		}
		out = append(out, total()-before)
	}
	return out
}

// TestEmulatedCompressionCountsWhatMemberlistSends: a MemNetwork that
// emulates compression counts, for memberlists that do not compress,
// exactly the bytes that compressing memberlists send: a join's
// push/pull, and packets and stream messages that compress well, badly
// and not at all, small and past 64 KiB.
func TestEmulatedCompressionCountsWhatMemberlistSends(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	noise := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return b
	}
	text := func(n int) []byte { return []byte(strings.Repeat("presence of sim0001-s: idle, active; ", n/36+1)[:n]) }
	var payloads [][]byte
	for _, n := range []int{1, 20, 31, 40, 300, 1000, 1300} {
		payloads = append(payloads, noise(n), text(n))
	}
	streams := [][]byte{noise(70_000), text(200_000), bytes.Repeat([]byte{0}, 5)}
	real := sentSizes(t, false, append(payloads, streams...))
	emulated := sentSizes(t, true, append(payloads, streams...))
	if len(real) != len(emulated) {
		t.Fatalf("%d figures against %d", len(real), len(emulated))
	}
	for i := range real {
		if real[i] != emulated[i] {
			t.Errorf("figure %d (0: the join; then packet and stream of each payload): memberlist sent %d bytes, the emulation counted %d", i, real[i], emulated[i])
		}
	}
}

// TestMeshOnAnEmulatingNetworkLeavesCompressionToIt: a mesh on a
// MemNetwork that emulates compression runs memberlist without it (the
// network counts its bytes compressed); on any other transport memberlist
// compresses as configured.
func TestMeshOnAnEmulatingNetworkLeavesCompressionToIt(t *testing.T) {
	cfg := TestConfig()
	cfg.Transport = (&MemNetwork{}).NewTransport()
	if !cfg.memberlistConfig().EnableCompression {
		t.Error("memberlist does not compress on a plain MemNetwork")
	}
	emu := &MemNetwork{}
	emu.EmulateCompression()
	cfg.Transport = emu.NewTransport()
	if cfg.memberlistConfig().EnableCompression {
		t.Error("memberlist compresses on a MemNetwork that emulates compression")
	}
}

// TestMemNetworkCountsOnlyWhileMetering: with Meter(false) nothing sent
// is counted, packets or streams; with Meter(true) both are again.
func TestMemNetworkCountsOnlyWhileMetering(t *testing.T) {
	net := &MemNetwork{}
	net.EmulateCompression()
	_, ta := quietList(t, net, "a", false)
	b, tb := quietList(t, net, "b", false)
	net.Meter(false)
	if _, err := b.Join([]string{ta.Addr()}); err != nil {
		t.Fatal(err)
	}
	var to *memberlist.Node
	for _, m := range b.Members() {
		if m.Name == "a" {
			to = m
		}
	}
	if err := b.SendBestEffort(to, []byte("unmetered")); err != nil {
		t.Fatal(err)
	}
	if n := ta.SentBytes() + tb.SentBytes(); n != 0 {
		t.Fatalf("%d bytes counted while not metering", n)
	}
	net.Meter(true)
	if err := b.SendBestEffort(to, []byte("metered")); err != nil {
		t.Fatal(err)
	}
	if err := b.SendReliable(to, []byte("metered")); err != nil {
		t.Fatal(err)
	}
	if tb.SentBytes() == 0 {
		t.Fatal("nothing counted while metering")
	}
}
