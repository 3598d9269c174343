package mesh

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"

	"github.com/hashicorp/memberlist"
	"pgregory.net/rapid"
)

// fakeCA stands for the mesh CA in these tests: the public key of each
// name it "signed". A credential is name | public key; the CA vouches for
// a pair when it holds it.
type fakeCA struct {
	mu   sync.Mutex
	keys map[string]ed25519.PublicKey
}

func (ca *fakeCA) issue(t testing.TB, name string) *fakeSigner {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca.mu.Lock()
	if ca.keys == nil {
		ca.keys = map[string]ed25519.PublicKey{}
	}
	ca.keys[name] = pub
	ca.mu.Unlock()
	return &fakeSigner{ca: ca, name: name, pub: pub, priv: priv, known: map[string]ed25519.PublicKey{}}
}

// fakeSigner signs with an ed25519 key; a signature is the key's first 4
// bytes (its "fingerprint") and the ed25519 signature.
type fakeSigner struct {
	ca   *fakeCA
	name string
	pub  ed25519.PublicKey
	priv ed25519.PrivateKey

	mu    sync.Mutex
	known map[string]ed25519.PublicKey
}

var _ Signer = (*fakeSigner)(nil)

func (s *fakeSigner) Credentials() []byte { return append([]byte(s.name+"|"), s.pub...) }

func (s *fakeSigner) Sign(msg []byte) ([]byte, error) {
	return append(bytes.Clone(s.pub[:4]), ed25519.Sign(s.priv, msg)...), nil
}

func (s *fakeSigner) Learn(_ string, creds []byte) error {
	i := bytes.IndexByte(creds, '|')
	if i < 0 {
		return errors.New("bad creds")
	}
	name, pub := string(creds[:i]), ed25519.PublicKey(creds[i+1:])
	s.ca.mu.Lock()
	ok := bytes.Equal(s.ca.keys[name], pub)
	s.ca.mu.Unlock()
	if !ok {
		return ErrBadSignature
	}
	s.mu.Lock()
	s.known[name] = pub
	s.mu.Unlock()
	return nil
}

func (s *fakeSigner) Verify(origin string, msg, sig []byte) error {
	s.mu.Lock()
	pub, ok := s.known[origin]
	s.mu.Unlock()
	if !ok || len(sig) < 4 || !bytes.Equal(sig[:4], pub[:4]) {
		return ErrUnknownSigner
	}
	if !ed25519.Verify(pub, msg, sig[4:]) {
		return ErrBadSignature
	}
	return nil
}

// signedCluster is n meshes, each with a signer from ca.
func signedCluster(t *testing.T, n int, ca *fakeCA, adjust func(i int, c *Config)) *Cluster {
	return MakeCluster(t, n, func(i int, c *Config) {
		c.Signer = ca.issue(t, fmt.Sprintf("node%d", i))
		if adjust != nil {
			adjust(i, c)
		}
	})
}

// knowsAll waits until every node's signer learnt every other's key (by
// push/pull), so that deltas are checked rather than dropped as unknown.
func knowsAll(t *testing.T, c *Cluster) {
	t.Helper()
	WaitFor(t, wait, "every signer knows every node", func() bool {
		for _, cf := range c.Configs {
			s := cf.Signer.(*fakeSigner)
			s.mu.Lock()
			n := len(s.known)
			s.mu.Unlock()
			if n < len(c.Configs)-1 {
				return false
			}
		}
		return true
	})
}

// forger is a raw memberlist member on the cluster's network: it holds
// the gossip "key" (the MemNetwork needs none) but no credential of the
// mesh, and sends whatever frames the test gives it.
type forger struct {
	list  *memberlist.Memberlist
	mu    sync.Mutex
	state []byte // what it answers on push/pull
}

func (f *forger) NodeMeta(int) []byte { return nil }
func (f *forger) NotifyMsg([]byte)    {}
func (f *forger) GetBroadcasts(int, int) [][]byte {
	return nil
}
func (f *forger) LocalState(bool) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return bytes.Clone(f.state)
}
func (f *forger) MergeRemoteState([]byte, bool) {}

func startForger(t *testing.T, c *Cluster) *forger {
	t.Helper()
	f := &forger{}
	mc := memberlist.DefaultLocalConfig()
	mc.Name = "forger"
	mc.Transport = c.Net.NewTransport()
	mc.Delegate = f
	mc.LogOutput = io.Discard
	list, err := memberlist.Create(mc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = list.Shutdown() })
	f.list = list
	if _, err := list.Join([]string{c.Addr(0)}); err != nil {
		t.Fatal(err)
	}
	return f
}

// sendAll sends frame to every mesh of the cluster, reliably, at its
// transport's address (memberlist's Members() nodes are updated by its
// goroutines without a lock a caller can take).
func (f *forger) sendAll(t *testing.T, c *Cluster, frame []byte) {
	t.Helper()
	for i, m := range c.Nodes {
		host, port, _ := net.SplitHostPort(c.Addr(i))
		p, _ := strconv.Atoi(port)
		to := &memberlist.Node{Name: m.LocalName(), Addr: net.ParseIP(host), Port: uint16(p)}
		var err error
		for try := 0; try < 3; try++ { // bounded: a stream may break under load
			if err = f.list.SendReliable(to, frame); err == nil {
				break
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestDigestDeltasOfDifferentOriginsDoNotSuppressEachOther: every node
// gossips its digest under one key; a node whose versions run behind (a
// slower clock) still has its digest delivered everywhere, and still
// sends it after it received a newer one from another node.
func TestDigestDeltasOfDifferentOriginsDoNotSuppressEachOther(t *testing.T) {
	for _, direct := range []int{32, 0} {
		t.Run(fmt.Sprintf("DirectSendMax=%d", direct), func(t *testing.T) {
			c := MakeCluster(t, 3, func(i int, c *Config) { c.DirectSendMax = direct })
			const key = "\x00digest"
			if err := c.Nodes[0].Broadcast(key, 1000, []byte("digest of node0")); err != nil {
				t.Fatal(err)
			}
			WaitFor(t, wait, "node0's digest everywhere", func() bool {
				for _, i := range []int{1, 2} {
					if !hasFrom(c.Handlers[i], "node0", key, 1000) {
						return false
					}
				}
				return true
			})
			if err := c.Nodes[1].Broadcast(key, 10, []byte("digest of node1")); err != nil {
				t.Fatal(err)
			}
			WaitFor(t, wait, "node1's older-numbered digest everywhere", func() bool {
				return hasFrom(c.Handlers[0], "node1", key, 10) && hasFrom(c.Handlers[2], "node1", key, 10)
			})
		})
	}
}

func hasFrom(h *RecordingHandler, from, key string, version uint64) bool {
	for _, d := range h.Deltas() {
		if d.From == from && d.Key == key && d.Version == version {
			return true
		}
	}
	return false
}

// TestQueuedDeltaOfAnotherOriginIsNotInvalidated: the gossip queue keeps
// one delta per origin and key, not per key.
func TestQueuedDeltaOfAnotherOriginIsNotInvalidated(t *testing.T) {
	a := &broadcast{kind: msgDelta, origin: "a", key: "k", version: 1}
	b := &broadcast{kind: msgDelta, origin: "b", key: "k", version: 9}
	if b.Invalidates(a) {
		t.Fatal("b's delta invalidated a's for the same key")
	}
	if !(&broadcast{kind: msgDelta, origin: "a", key: "k", version: 2}).Invalidates(a) {
		t.Fatal("a newer version of a's key did not invalidate the older")
	}
}

// TestForgedDeltaFromAGossipKeyHolderIsNotApplied: a member that holds
// the gossip key but no credential sends deltas claiming node1's origin
// at version 2^62, unsigned and signed with a key the CA never vouched
// for. No node delivers them, each is counted, and node1's next update
// (at an ordinary version) reaches every node.
func TestForgedDeltaFromAGossipKeyHolderIsNotApplied(t *testing.T) {
	ca := &fakeCA{}
	c := signedCluster(t, 3, ca, nil)
	knowsAll(t, c)
	f := startForger(t, c)
	const key, forged = "s-1", uint64(1) << 62
	unsigned, _ := EncodeDeltaFrame("node1", key, forged, []byte("forged"), nil)
	rogue := (&fakeCA{}).issue(t, "node1") // a key no mesh node trusts
	signed, _ := EncodeDeltaFrame("node1", key, forged, []byte("forged"), rogue.Sign)
	// node2's real key, claiming node1's origin.
	other, _ := EncodeDeltaFrame("node1", key, forged, []byte("forged"), c.Configs[2].Signer.Sign)
	for _, fr := range [][]byte{unsigned, signed, other} {
		f.sendAll(t, c, fr)
	}
	WaitFor(t, wait, "the forged deltas counted as refused", func() bool {
		d0, d2 := c.Nodes[0].Drops(), c.Nodes[2].Drops()
		// node0 refuses all three; node2 ignores nothing either: the
		// frame under its own key still claims node1.
		return d0.Unsigned >= 1 && d0.BadSignature+d0.UnknownSigner >= 2 &&
			d2.Unsigned >= 1 && d2.BadSignature+d2.UnknownSigner >= 2
	})
	if err := c.Nodes[1].Broadcast(key, 5, []byte("real")); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, wait, "node1's real update everywhere", func() bool {
		return hasFrom(c.Handlers[0], "node1", key, 5) && hasFrom(c.Handlers[2], "node1", key, 5)
	})
	for i, h := range c.Handlers {
		for _, d := range h.Deltas() {
			if d.Version == forged {
				t.Fatalf("node%d applied a forged delta: %+v", i, d)
			}
		}
	}
}

// TestForgedStateFromAGossipKeyHolderIsNotMerged: the same holder answers
// push/pull with a state claiming node1's origin; nobody merges it.
func TestForgedStateFromAGossipKeyHolderIsNotMerged(t *testing.T) {
	ca := &fakeCA{}
	c := signedCluster(t, 2, ca, nil)
	rogue := (&fakeCA{}).issue(t, "node1")
	st, _ := EncodeStateFrame("node1", []byte("forged blob"), rogue.Credentials(), rogue.Sign)
	f := &forger{state: st}
	mc := memberlist.DefaultLocalConfig()
	mc.Name, mc.Transport, mc.Delegate, mc.LogOutput = "forger", c.Net.NewTransport(), f, io.Discard
	list, err := memberlist.Create(mc)
	if err != nil {
		t.Fatal(err)
	}
	defer list.Shutdown()
	if _, err := list.Join([]string{c.Addr(0)}); err != nil { // a push/pull with node0
		t.Fatal(err)
	}
	WaitFor(t, wait, "the forged state refused", func() bool { return c.Nodes[0].Drops().UnknownSigner+c.Nodes[0].Drops().BadSignature > 0 })
	c.Handlers[1].SetState([]byte("real blob"))
	WaitFor(t, wait, "node1's real state merged", func() bool {
		for _, m := range c.Handlers[0].Merges() {
			if m.From == "node1" && string(m.Blob) == "real blob" {
				return true
			}
		}
		return false
	})
	for _, m := range c.Handlers[0].Merges() {
		if string(m.Blob) == "forged blob" {
			t.Fatal("node0 merged the forged state")
		}
	}
}

// TestStateOverMaxStateSizeIsDropped: a push/pull state over the bound is
// refused and counted; one within it is merged.
func TestStateOverMaxStateSizeIsDropped(t *testing.T) {
	c := MakeCluster(t, 2, func(i int, c *Config) { c.MaxStateSize = 4096 })
	c.Handlers[1].SetState(bytes.Repeat([]byte("x"), 5000))
	WaitFor(t, wait, "the large state refused", func() bool { return c.Nodes[0].Drops().TooLarge > 0 })
	for _, m := range c.Handlers[0].Merges() {
		if len(m.Blob) == 5000 {
			t.Fatal("a state over MaxStateSize was merged")
		}
	}
	c.Handlers[1].SetState([]byte("small"))
	WaitFor(t, wait, "the small state merged", func() bool {
		for _, m := range c.Handlers[0].Merges() {
			if m.From == "node1" && string(m.Blob) == "small" {
				return true
			}
		}
		return false
	})
}

// TestSignedMeshRefusesUnsignedFrameButUnsignedMeshReadsSigned: a signed
// frame decodes on a mesh without a Signer (delivered unchecked), and a
// mesh with one refuses an unsigned frame.
func TestSignedMeshRefusesUnsignedFrameButUnsignedMeshReadsSigned(t *testing.T) {
	ca := &fakeCA{}
	s := ca.issue(t, "a")
	signed, _ := EncodeDeltaFrame("a", "k", 3, []byte("d"), s.Sign)
	d, err := decodeDelta(signed)
	if err != nil || !d.signed || d.origin != "a" || string(d.data) != "d" {
		t.Fatalf("signed frame: %+v %v", d, err)
	}
	st, _ := EncodeStateFrame("a", []byte("blob"), s.Credentials(), s.Sign)
	ps, err := decodeState(st)
	if err != nil || !ps.signed || string(ps.blob) != "blob" || !bytes.Equal(ps.creds, s.Credentials()) {
		t.Fatalf("signed state: %+v %v", ps, err)
	}
	if err := s.Verify("a", signedMsg(stateDomain, ps.body), ps.sig); !errors.Is(err, ErrUnknownSigner) {
		t.Fatalf("verify before learning: %v", err)
	}
	_ = s.Learn("a", ps.creds)
	if err := s.Verify("a", signedMsg(stateDomain, ps.body), ps.sig); err != nil {
		t.Fatalf("verify after learning: %v", err)
	}
	if err := s.Verify("a", signedMsg(deltaDomain, ps.body), ps.sig); err == nil {
		t.Fatal("a state signature passed as a delta's")
	}
}

// TestSeenRuleIsPerOrigin (property): over any sequence of deliveries, a
// delta is fresh exactly when its version is above every version seen
// before for the same origin and key; other origins never matter.
func TestSeenRuleIsPerOrigin(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := TestConfig()
		cfg.Handler = &RecordingHandler{}
		m, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		model := map[seenKey]uint64{}
		n := rapid.IntRange(1, 60).Draw(t, "n")
		for i := 0; i < n; i++ {
			k := seenKey{rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "origin"),
				rapid.SampledFrom([]string{"k", "\x00digest"}).Draw(t, "key")}
			v := rapid.OneOf(rapid.Uint64Range(0, 20), rapid.Just(uint64(1)<<62)).Draw(t, "version")
			want := false
			if cur, ok := model[k]; !ok || v > cur {
				want = true
				model[k] = v
			}
			if got := m.freshDelta(k, v); got != want {
				t.Fatalf("delivery %d %+v v%d: fresh=%v, want %v", i, k, v, got, want)
			}
		}
	})
}
