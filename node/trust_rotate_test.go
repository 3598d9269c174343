package node

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"google.golang.org/grpc/credentials"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/meshtrust"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/raftstore"
)

func TestCARotationTrustsBothCAsDuringTheOverlap(t *testing.T) {
	m, _ := startTrustMesh(t)
	n0 := m.nodes[0]
	n1 := m.join("tw1", m.token(true, 0, 0), true)
	n2 := m.join("tw2", m.token(false, 0, 0), false)
	oldCA := n0.cl.Parts().Trust.Authority().CA()
	oldCert := issue(t, oldCA, "tw9", trust.RoleServer, time.Now(), time.Hour)
	waitFor(t, 10*time.Second, "tw2 in the registry", func() bool {
		_, ok := n2.cl.Registry().KVGet(meshtrust.KVIssuedPrefix + mustSerial(t, n0))
		return ok
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := n0.trust.MeshAdmin(ctx, wire.AdminCARotate, nil); err != nil {
		t.Fatal(err)
	}
	newFP := n0.cl.Parts().Trust.Authority().Fingerprint()
	waitFor(t, 10*time.Second, "tw1 holds the new CA", func() bool {
		a := n1.cl.Parts().Trust.Authority()
		return a != nil && a.Fingerprint().Equal(newFP) && a.Rotating()
	})
	waitFor(t, 10*time.Second, "tw2 renewed onto the new CA", func() bool { return n2.cl.Parts().Trust.CAStatus().OnCurrent })
	// During the overlap an old-CA certificate still works.
	if _, err := dialCluster(t, n0.RPCAddr(), credentials.NewTLS(rawTLS(&oldCert))).Presence(ctx, &api.PresenceRequest{}); err != nil {
		t.Fatalf("an old-CA certificate was refused during the overlap: %v", err)
	}
	// Servers move at their renewer's next check (a minute): make it now.
	for _, n := range []*Node{n0, n1} {
		waitFor(t, 20*time.Second, n.Name()+" renewed onto the new CA", func() bool {
			_, err := n.cl.Parts().Trust.Renewer().Check(ctx)
			return err == nil && n.cl.Parts().Trust.CAStatus().OnCurrent
		})
	}
	if _, err := n1.trust.MeshAdmin(ctx, wire.AdminCAFinish, nil); err != nil {
		t.Fatal(err)
	}
	for _, n := range m.nodes {
		waitFor(t, 10*time.Second, n.Name()+" trusts only the new CA", func() bool { return len(n.cl.Parts().Trust.Holder().Roots().Certs()) == 1 })
	}
	if _, err := dialCluster(t, n0.RPCAddr(), credentials.NewTLS(rawTLS(&oldCert))).Presence(ctx, &api.PresenceRequest{}); err == nil {
		t.Fatal("an old-CA certificate was accepted after the rotation finished")
	}
	// The mesh still works on the new CA: a node reads a server, a write
	// forwarded by a node reaches the leader.
	for _, n := range []*Node{n0, n1} {
		if _, err := asMember(t, n2, n).Presence(ctx, &api.PresenceRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := json.Marshal(wire.TokenCreateArgs{})
	if _, err := n2.trust.MeshAdmin(ctx, wire.AdminKeyringList, b); err != nil {
		t.Fatal(err)
	}
	if _, err := n2.cl.Apply(ctx, raftstore.UpsertCommand(raftstore.Upsert{SessionID: "after-rotation", TS: time.Now(),
		Identity: &raftstore.IdentityPatch{Node: "tw2"}})); err != nil {
		t.Fatalf("a node's write after the rotation: %v", err)
	}
}

func mustSerial(t *testing.T, n *Node) string {
	t.Helper()
	id, err := n.cl.Parts().Trust.Holder().Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id.Serial
}
