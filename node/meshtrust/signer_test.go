package meshtrust

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/util/clock"
)

// TestGossipSignerAcceptsOnlyTheOriginsOwnValidCertificate: the signer
// keeps a certificate only when it chains to the mesh CA, and checks a
// signature only as the certificate's own node's, while it is valid (at
// the fake clock) and not revoked.
func TestGossipSignerAcceptsOnlyTheOriginsOwnValidCertificate(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(now)
	ca, err := trust.NewCA(now.Add(-time.Hour), trust.DefaultCATTL)
	if err != nil {
		t.Fatal(err)
	}
	roots := trust.NewRoots(ca.Cert)
	mk := func(name string) *Signer {
		c := issue(t, ca, name, trust.RoleNode, now, time.Hour)
		return NewSigner(trust.NewHolder(&c, roots), trust.NewRevocationList(), clk)
	}
	a, b := mk("a"), mk("b")
	revs := trust.NewRevocationList()
	self := issue(t, ca, "me", trust.RoleNode, now, time.Hour)
	me := NewSigner(trust.NewHolder(&self, roots), revs, clk)
	msg := []byte("delta")
	sigA, _ := a.Sign(msg)
	if err := me.Verify("a", msg, sigA); !errors.Is(err, mesh.ErrUnknownSigner) {
		t.Fatalf("before learning: %v", err)
	}
	if err := me.Learn("b", b.Credentials()); err != nil {
		t.Fatal(err)
	}
	if err := me.Learn("x", a.Credentials()); err != nil {
		t.Fatal(err)
	}
	if err := me.Verify("a", msg, sigA); err != nil {
		t.Fatalf("a's own signature: %v", err)
	}
	if err := me.Verify("b", msg, sigA); !errors.Is(err, mesh.ErrBadSignature) {
		t.Fatalf("a's signature claiming b: %v", err)
	}
	if err := me.Verify("a", []byte("other"), sigA); !errors.Is(err, mesh.ErrBadSignature) {
		t.Fatalf("a's signature over another message: %v", err)
	}
	foreign := foreignCert(t, "c", trust.RoleNode, now, time.Hour)
	fs := NewSigner(trust.NewHolder(&foreign, nil), trust.NewRevocationList(), clk)
	if err := me.Learn("c", fs.Credentials()); !errors.Is(err, mesh.ErrBadSignature) || me.Known("c") {
		t.Fatalf("a certificate of another CA was kept: %v", err)
	}
	clk.Advance(2 * time.Hour)
	if err := me.Verify("a", msg, sigA); !errors.Is(err, mesh.ErrBadSignature) {
		t.Fatalf("an expired certificate's signature: %v", err)
	}
	clk.Set(now)
	id, _ := a.holder.Identity()
	revs.Add(id.Serial)
	if err := me.Verify("a", msg, sigA); !errors.Is(err, mesh.ErrBadSignature) {
		t.Fatalf("a revoked certificate's signature: %v", err)
	}
	if got := me.Prune(); len(got) != 1 || got[0] != "a" {
		t.Fatalf("prune named %v, want [a]", got)
	}
	if err := me.Learn("a", a.Credentials()); !errors.Is(err, mesh.ErrBadSignature) || me.Known("a") {
		t.Fatalf("a revoked certificate was learnt again: %v", err)
	}
}

// foreignCert is a certificate with a valid-looking identity from another CA.
func foreignCert(t *testing.T, name string, role trust.Role, now time.Time, ttl time.Duration) tls.Certificate {
	t.Helper()
	ca, err := trust.NewCA(now.Add(-time.Hour), trust.DefaultCATTL)
	if err != nil {
		t.Fatal(err)
	}
	return issue(t, ca, name, role, now, ttl)
}

func issue(t *testing.T, ca *trust.CA, name string, role trust.Role, now time.Time, ttl time.Duration) tls.Certificate {
	t.Helper()
	key, err := trust.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.Issue(key.Public(), name, role, ttl, now)
	if err != nil {
		t.Fatal(err)
	}
	return trust.TLSCertificate(cert, key)
}

// credCount reads how many certificates a Credentials blob carries, and
// their names.
func credNames(t *testing.T, creds []byte) []string {
	t.Helper()
	b := creds[1:]
	n, k := binary.Uvarint(b)
	b = b[k:]
	var out []string
	for i := uint64(0); i < n; i++ {
		l, k := binary.Uvarint(b)
		c, err := x509.ParseCertificate(b[k : k+int(l)])
		if err != nil {
			t.Fatal(err)
		}
		id, _ := trust.CertIdentity(c)
		out = append(out, id.Name)
		b = b[k+int(l):]
	}
	return out
}

// TestPushPullCredentialsStayBounded: a push/pull carries this node's
// certificate and at most CredRelay others, whatever the mesh's size,
// taking the others in turn so that every known one travels.
func TestPushPullCredentialsStayBounded(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(now)
	ca, err := trust.NewCA(now.Add(-time.Hour), trust.DefaultCATTL)
	if err != nil {
		t.Fatal(err)
	}
	roots := trust.NewRoots(ca.Cert)
	self := issue(t, ca, "me", trust.RoleNode, now, time.Hour)
	me := NewSigner(trust.NewHolder(&self, roots), trust.NewRevocationList(), clk)
	const peers = 100
	for i := range peers {
		c := issue(t, ca, fmt.Sprintf("p%03d", i), trust.RoleNode, now, time.Hour)
		if err := me.Learn("x", NewSigner(trust.NewHolder(&c, roots), trust.NewRevocationList(), clk).Credentials()); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for range (peers + CredRelay - 1) / CredRelay {
		names := credNames(t, me.Credentials())
		if len(names) != 1+CredRelay || names[0] != "me" {
			t.Fatalf("a push/pull carries %d certificates (%v...), want this node's and %d", len(names), names[:2], CredRelay)
		}
		for _, n := range names[1:] {
			seen[n] = true
		}
	}
	if len(seen) != peers {
		t.Fatalf("%d of %d peers' certificates travelled in %d push/pulls", len(seen), peers, (peers+CredRelay-1)/CredRelay)
	}
}
