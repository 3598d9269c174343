package e2e

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/trust"
)

// e2eForger is a raw memberlist member holding only the mesh's gossip
// key; it answers push/pull with a forged state.
type e2eForger struct{ state []byte }

func (f *e2eForger) NodeMeta(int) []byte             { return nil }
func (f *e2eForger) NotifyMsg([]byte)                {}
func (f *e2eForger) GetBroadcasts(int, int) [][]byte { return nil }
func (f *e2eForger) LocalState(bool) []byte          { return f.state }
func (f *e2eForger) MergeRemoteState([]byte, bool)   {}

// TestForgedPresenceDeltaFromGossipKeyHolderIsRefused: on a mesh of two
// `harn node` processes over mutual TLS, a process holding the gossip key
// (read from s0's data dir) joins as a raw memberlist member and sends
// presence for n1's session at version 2^62, unsigned and signed with a
// certificate of another CA, and answers push/pull with a forged state.
// s0 shows none of it, and n1's next real update shows on s0.
func TestForgedPresenceDeltaFromGossipKeyHolderIsRefused(t *testing.T) {
	s0, n1 := trustedMesh(t)
	const sid, cwd = "sigpres-e2e-1", "/home/ana/shop"
	startClaudeSession(n1, sid, cwd)
	eventually(t, meshTimeout, "n1's session on s0 from gossip", func() (bool, string) {
		s, ok, why := s0.session(false, sid)
		return ok && s.Node == "n1" && s.Activity == "working", why + fmt.Sprint(s)
	})

	var ring struct {
		Primary []byte `json:"primary"`
	}
	b, err := os.ReadFile(filepath.Join(s0.dataDir, "tls", "keyring.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &ring); err != nil || len(ring.Primary) != 32 {
		t.Fatalf("keyring: %v", err)
	}

	const forged = uint64(1) << 62
	entry := []byte(fmt.Sprintf(`{"id":%q,"activity":"needs_input","task_state":"blocked","blocker":"forged","task":"forged: rm -rf /important","hash":"forged"}`, sid))
	signFn := foreignSigner(t, "n1")
	blob := []byte(fmt.Sprintf(`{"node":"n1","at":%d,"entries":[%s],"versions":[%d]}`, forged, entry, forged))
	state, err := mesh.EncodeStateFrame("n1", blob, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &e2eForger{state: state}
	mc := memberlist.DefaultLocalConfig()
	mc.Name, mc.BindAddr, mc.BindPort, mc.AdvertisePort = "forger", "127.0.0.1", 0, 0
	mc.SecretKey, mc.Delegate, mc.LogOutput, mc.TCPTimeout = ring.Primary, f, io.Discard, 5*time.Second
	list, err := memberlist.Create(mc)
	if err != nil {
		t.Fatal(err)
	}
	defer list.Shutdown()
	for try := 0; ; try++ { // bounded: the join's push/pull may time out under load
		if _, err = list.Join([]string{s0.gossipAddr}); err == nil {
			break
		}
		if try == 4 {
			t.Fatalf("the forger could not join with the mesh's gossip key: %v", err)
		}
	}
	unsigned, _ := mesh.EncodeDeltaFrame("n1", sid, forged, entry, nil)
	foreign, _ := mesh.EncodeDeltaFrame("n1", sid, forged, entry, signFn)
	host, port, _ := net.SplitHostPort(s0.gossipAddr)
	p, _ := strconv.Atoi(port)
	to := &memberlist.Node{Name: "s0", Addr: net.ParseIP(host), Port: uint16(p)}
	for _, fr := range [][]byte{unsigned, foreign} {
		if err := list.SendReliable(to, fr); err != nil {
			t.Fatal(err)
		}
	}

	// n1's next real update (the turn stops: idle) reaches s0; the forged
	// version 2^62 would have hidden it.
	n1.hook("claude-code", `{`+claudeCommon(sid, cwd)+`,"hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"Done."}`)
	eventually(t, meshTimeout, "n1's real update on s0", func() (bool, string) {
		s, ok, why := s0.session(false, sid)
		return ok && s.Activity == "idle", why + fmt.Sprint(s)
	})
	s, ok, why := s0.session(false, sid)
	if !ok || s.Task == "forged: rm -rf /important" || s.BlockerReason == "forged" || s.TaskState == "blocked" {
		t.Fatalf("s0 shows forged presence: %v %s", s, why)
	}
}

// foreignSigner signs as the node's gossip signer does (format byte,
// certificate fingerprint, ECDSA over SHA-256), with a certificate for
// name from a CA the mesh does not trust.
func foreignSigner(t *testing.T, name string) func([]byte) ([]byte, error) {
	t.Helper()
	now := time.Now()
	ca, err := trust.NewCA(now.Add(-time.Hour), trust.DefaultCATTL)
	if err != nil {
		t.Fatal(err)
	}
	key, err := trust.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.Issue(key.Public(), name, trust.RoleNode, time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	fp := sha256.Sum256(cert.Raw)
	return func(msg []byte) ([]byte, error) {
		sum := sha256.Sum256(msg)
		sig, err := ecdsa.SignASN1(rand.Reader, key, sum[:])
		return append(append([]byte{1}, fp[:16]...), sig...), err
	}
}
