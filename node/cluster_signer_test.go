package node

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/gossip"
	"github.com/harn-dev/harn/node/meshtrust"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/presence"
)

// rawForger is a raw memberlist member that holds the mesh's gossip key
// and nothing else of the mesh: it joins, answers push/pull with state,
// and sends the frames a test gives it.
type rawForger struct {
	list  *memberlist.Memberlist
	mu    sync.Mutex
	state []byte
}

func (f *rawForger) NodeMeta(int) []byte             { return nil }
func (f *rawForger) NotifyMsg([]byte)                {}
func (f *rawForger) GetBroadcasts(int, int) [][]byte { return nil }
func (f *rawForger) MergeRemoteState([]byte, bool)   {}
func (f *rawForger) LocalState(bool) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return bytes.Clone(f.state)
}
func (f *rawForger) setState(b []byte)                       { f.mu.Lock(); f.state = b; f.mu.Unlock() }
func (f *rawForger) members() []*memberlist.Node             { return f.list.Members() }
func (f *rawForger) send(n *memberlist.Node, b []byte) error { return f.list.SendReliable(n, b) }

// startRawForger joins the mesh at seed with key, answering push/pull
// with state.
func startRawForger(t *testing.T, key []byte, seed string, state []byte) *rawForger {
	t.Helper()
	f := &rawForger{state: state}
	mc := memberlist.DefaultLocalConfig()
	mc.Name, mc.BindAddr, mc.BindPort, mc.AdvertisePort = "forger", "127.0.0.1", 0, 0
	mc.SecretKey, mc.Delegate, mc.LogOutput = key, f, io.Discard
	mc.TCPTimeout = 5 * time.Second // a loaded machine under -race
	list, err := memberlist.Create(mc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = list.Shutdown() })
	f.list = list
	for try := 0; ; try++ { // bounded: a push/pull may time out under load
		_, err := list.Join([]string{seed})
		if err == nil {
			break
		}
		if try == 4 {
			t.Fatal(err)
		}
	}
	return f
}

// sendAll sends frame to each node's gossip address, reliably. (Not to
// memberlist's Members(): its nodes are shared with memberlist's own
// goroutines, which update them without a lock the caller can take.)
func (f *rawForger) sendAll(t *testing.T, frame []byte, to ...*Node) {
	t.Helper()
	for _, n := range to {
		host, port, err := net.SplitHostPort(n.MeshAddr())
		if err != nil {
			t.Fatal(err)
		}
		p, _ := strconv.Atoi(port)
		dst := &memberlist.Node{Name: n.Name(), Addr: net.ParseIP(host), Port: uint16(p)}
		for try := 0; try < 3; try++ { // bounded: loopback under load
			if err = f.send(dst, frame); err == nil {
				break
			}
		}
		if err != nil {
			t.Fatalf("send to %s: %v", n.Name(), err)
		}
	}
}

// forgedEntry is a delta's payload claiming session id with a task no
// real node says.
func forgedEntry(t *testing.T, id string) []byte {
	t.Helper()
	b, err := gossip.EncodeDelta(gossip.Entry{SessionRow: &api.SessionRow{SessionId: id, Task: "forged: rm -rf /important", Activity: "working",
		TaskState: "active"}, Hash: "forged"})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// refusals is what a node's mesh refused so far.
func refusals(n *Node) int64 {
	d := n.cl.Parts().Mesh.Drops()
	return d.Unsigned + d.BadSignature + d.UnknownSigner
}

func signersKnowEachOther(t *testing.T, nodes ...*Node) {
	t.Helper()
	waitFor(t, 30*time.Second, "every node knows every other's certificate", func() bool {
		for _, a := range nodes {
			for _, b := range nodes {
				if a != b && !a.cl.Parts().Signer.Known(b.Name()) {
					return false
				}
			}
		}
		return true
	})
}

// TestForgedPresenceFromAGossipKeyHolderIsNotApplied: a member holding
// only the gossip key sends deltas claiming tw1's session at version 2^62:
// unsigned, signed with a certificate of another CA, and signed with
// tw2's valid certificate; and answers push/pull with a forged state for
// tw1. No node applies any of it, and tw1's next real update shows on
// every node.
func TestForgedPresenceFromAGossipKeyHolderIsNotApplied(t *testing.T) {
	m, _ := startTrustMesh(t)
	n0 := m.nodes[0]
	n1 := m.join("tw1", m.token(false, 0, 0), false)
	n2 := m.join("tw2", m.token(false, 0, 0), false)
	signersKnowEachOther(t, n0, n1, n2)
	const sid = "sess-real"
	cbIngest(t, n1, sid, presence.TypeSessionStart, nil)
	waitFor(t, 30*time.Second, "tw1's session on tw0 and tw2", func() bool {
		return remoteVersion(n0, "tw1", sid) > 0 && remoteVersion(n2, "tw1", sid) > 0
	})

	key, _, err := n0.cl.Parts().Mesh.Keys()
	if err != nil {
		t.Fatal(err)
	}
	const forged = uint64(1) << 62
	foreign := foreignCert(t, "tw1", trust.RoleNode, time.Now(), time.Hour)
	rogue := meshtrust.NewSigner(trust.NewHolder(&foreign, nil), trust.NewRevocationList(), n0.cfg.Clock)
	blob, _ := json.Marshal(gossip.Blob{Node: "tw1", At: forged, Entries: []gossip.Entry{{SessionRow: &api.SessionRow{SessionId: sid, Task: "forged"}}},
		Versions: []uint64{forged}})
	state, err := mesh.EncodeStateFrame("tw1", blob, rogue.Credentials(), rogue.Sign)
	if err != nil {
		t.Fatal(err)
	}
	before0, before2 := refusals(n0), refusals(n2)
	f := startRawForger(t, key, n0.MeshAddr(), state)

	entry := forgedEntry(t, sid)
	unsigned, _ := mesh.EncodeDeltaFrame("tw1", sid, forged, entry, nil)
	foreignSigned, _ := mesh.EncodeDeltaFrame("tw1", sid, forged, entry, rogue.Sign)
	otherSigned, _ := mesh.EncodeDeltaFrame("tw1", sid, forged, entry, n2.cl.Parts().Signer.Sign)
	for _, fr := range [][]byte{unsigned, foreignSigned, otherSigned} {
		f.sendAll(t, fr, n0, n1, n2)
	}
	// tw2 never sees its own frame (origin tw1 is not its name, so it
	// checks it too): three refusals on each.
	refused := func() bool { return refusals(n0)-before0 >= 3 && refusals(n2)-before2 >= 3 }
	for deadline := time.Now().Add(60 * time.Second); !refused(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the forged frames were not all refused on tw0 and tw2: tw0 %+v (before %d), tw2 %+v (before %d)",
				n0.cl.Parts().Mesh.Drops(), before0, n2.cl.Parts().Mesh.Drops(), before2)
		}
	}
	for _, n := range []*Node{n0, n2} {
		if v := remoteVersion(n, "tw1", sid); v == forged {
			t.Fatalf("%s applied the forged version", n.Name())
		}
		if e, _ := n.remote.Get("tw1", sid); e.SessionRow.GetTask() != "" {
			t.Fatalf("%s holds the forged task %q", n.Name(), e.SessionRow.GetTask())
		}
	}
	// The real owner's next update reaches everyone.
	cbIngest(t, n1, sid, presence.TypeInputRequested, nil)
	v := sentVersion(n1, sid)
	waitFor(t, 30*time.Second, "tw1's real update on tw0 and tw2", func() bool {
		return remoteVersion(n0, "tw1", sid) >= v && remoteVersion(n2, "tw1", sid) >= v
	})
	for _, n := range []*Node{n0, n2} {
		if remoteVersion(n, "tw1", sid) == forged {
			t.Fatalf("%s holds the forged version", n.Name())
		}
	}
}

// TestRevokedNodesPresenceIsRefusedAndDropped: once tw2's certificate is
// revoked (harn mesh remove), what it gossiped before is dropped and its
// new deltas, even at version 2^62, are refused; tw1's keep flowing.
func TestRevokedNodesPresenceIsRefusedAndDropped(t *testing.T) {
	m, _ := startTrustMesh(t)
	n0 := m.nodes[0]
	n1 := m.join("tw1", m.token(false, 0, 0), false)
	n2 := m.join("tw2", m.token(false, 0, 0), false)
	signersKnowEachOther(t, n0, n1, n2)
	cbIngest(t, n2, "sess-2", presence.TypeSessionStart, nil)
	waitFor(t, 30*time.Second, "tw2's session on tw0", func() bool { return remoteVersion(n0, "tw2", "sess-2") > 0 })
	id, _ := n2.cl.Parts().Trust.Holder().Identity()
	waitFor(t, 10*time.Second, "tw2's certificate recorded", func() bool {
		_, ok := n0.cl.Registry().KVGet(meshtrust.KVIssuedPrefix + id.Serial)
		return ok
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	args, _ := json.Marshal("tw2")
	if _, err := n0.trust.MeshAdmin(ctx, wire.AdminRevokeNode, args); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the revocation on tw0 and tw1", func() bool {
		return n0.cl.Parts().Trust.Revocations().IsRevoked(id.Serial) && n1.cl.Parts().Trust.Revocations().IsRevoked(id.Serial)
	})
	waitFor(t, 10*time.Second, "tw2's presence dropped on tw0 and tw1", func() bool {
		return remoteVersion(n0, "tw2", "sess-2") == 0 && remoteVersion(n1, "tw2", "sess-2") == 0
	})
	// Its certificate is forgotten with the revocation: the delta is
	// refused as signed by an unknown certificate (or a revoked one).
	before := refusals(n0)
	const forged = uint64(1) << 62
	if err := n2.cl.Parts().Mesh.Broadcast("sess-2", forged, forgedEntry(t, "sess-2")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "tw2's delta refused on tw0", func() bool { return refusals(n0) > before })
	if remoteVersion(n0, "tw2", "sess-2") != 0 {
		t.Fatal("tw0 applied a delta signed with a revoked certificate")
	}
	cbIngest(t, n1, "sess-1", presence.TypeSessionStart, nil)
	waitFor(t, 30*time.Second, "tw1's session on tw0", func() bool { return remoteVersion(n0, "tw1", "sess-1") > 0 })
	if remoteVersion(n0, "tw2", "sess-2") != 0 || remoteVersion(n1, "tw2", "sess-2") != 0 {
		t.Fatal("a revoked node's presence came back")
	}
}
