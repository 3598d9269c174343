package trust

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net/url"
	"testing"
	"time"
)

func TestCertCarriesNameAndRoleAsURISAN(t *testing.T) {
	m := newTestMesh(t)
	for _, role := range []Role{RoleServer, RoleNode} {
		c := m.issue("build-box.1", role, 0)
		if len(c.Leaf.URIs) != 1 || c.Leaf.URIs[0].String() != "harn://mesh/"+string(role)+"/build-box.1" {
			t.Fatalf("URIs %v", c.Leaf.URIs)
		}
		id, err := CertIdentity(c.Leaf)
		if err != nil || id.Name != "build-box.1" || id.Role != role || id.Serial != SerialString(c.Leaf) {
			t.Fatalf("identity %+v, %v", id, err)
		}
	}
}

func TestDefaultCertLifetimeIs30Days(t *testing.T) {
	m := newTestMesh(t)
	c := m.issue("laptop", RoleNode, 0)
	if got := c.Leaf.NotAfter.Sub(m.clk.Now()); got != 30*24*time.Hour {
		t.Fatalf("lifetime %v", got)
	}
}

func TestCertNeverOutlivesCA(t *testing.T) {
	m := newTestMesh(t)
	c := m.issue("laptop", RoleNode, 20*365*24*time.Hour)
	if c.Leaf.NotAfter.After(m.a.CA().Cert.NotAfter) {
		t.Fatal("leaf outlives its CA")
	}
}

func TestSignUsesGivenIdentityNotTheCSRs(t *testing.T) {
	m := newTestMesh(t)
	key, _ := NewKey()
	der, err := NewCSR(key, "impostor", RoleServer)
	if err != nil {
		t.Fatal(err)
	}
	csr, err := ParseCSR(der)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := m.a.Sign(csr, "laptop", RoleNode, 0)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := CertIdentity(cert)
	if id.Name != "laptop" || id.Role != RoleNode {
		t.Fatalf("signed %+v; the CSR's name or role leaked in", id)
	}
}

func TestNeedsRenewalAfterTwoThirdsOfLifetime(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &x509.Certificate{NotBefore: start, NotAfter: start.Add(30 * time.Hour)}
	for _, tc := range []struct {
		at   time.Duration
		want bool
	}{
		{-time.Minute, true}, {0, false}, {19 * time.Hour, false}, {20*time.Hour - time.Second, false},
		{20 * time.Hour, true}, {29 * time.Hour, true}, {30 * time.Hour, true}, {40 * time.Hour, true},
	} {
		if got := NeedsRenewal(c, start.Add(tc.at)); got != tc.want {
			t.Errorf("at +%v: %v, want %v", tc.at, got, tc.want)
		}
	}
}

func TestCertIdentityRejectsMalformed(t *testing.T) {
	u := func(s string) *url.URL { x, _ := url.Parse(s); return x }
	for name, uris := range map[string][]*url.URL{
		"none":        nil,
		"other host":  {u("harn://evil/node/a")},
		"bad role":    {u("harn://mesh/admin/a")},
		"bad name":    {u("harn://mesh/node/a%20b")},
		"extra part":  {u("harn://mesh/node/a/b")},
		"two":         {u("harn://mesh/node/a"), u("harn://mesh/server/a")},
		"query":       {u("harn://mesh/node/a?x=1")},
		"userinfo":    {u("harn://x@mesh/node/a")},
		"empty name":  {u("harn://mesh/node/")},
		"leading dot": {u("harn://mesh/node/.a")},
	} {
		c := &x509.Certificate{URIs: uris, Subject: pkix.Name{CommonName: "a"}}
		if _, err := CertIdentity(c); !errors.Is(err, ErrNoIdentity) {
			t.Errorf("%s: err %v, want ErrNoIdentity", name, err)
		}
	}
}

func TestValidName(t *testing.T) {
	for _, ok := range []string{"a", "laptop", "Build-Box_2.lan", string(make([]byte, 0)) + "x1"} {
		if err := ValidName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	long := make([]byte, MaxNameLen+1)
	for i := range long {
		long[i] = 'a'
	}
	for _, bad := range []string{"", "-a", ".a", "a b", "a/b", "a\x1b[31m", "é", string(long)} {
		if err := ValidName(bad); !errors.Is(err, ErrBadName) {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseCSRRefusesBadSignature(t *testing.T) {
	key, _ := NewKey()
	der, _ := NewCSR(key, "laptop", RoleNode)
	der[len(der)-3] ^= 0xff
	if _, err := ParseCSR(der); !errors.Is(err, ErrBadCSR) {
		t.Fatalf("err %v", err)
	}
}
