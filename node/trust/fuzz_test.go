package trust

import (
	"crypto/x509"
	"errors"
	"testing"
	"time"
)

// fuzzSeeds makes a valid request, renewal and response to seed the
// decoders' corpora.
func fuzzSeeds(f *testing.F) (req, renew, resp []byte, now time.Time) {
	now = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	ca, err := NewCA(now, 0)
	if err != nil {
		f.Fatal(err)
	}
	key, _ := NewKey()
	csr, _ := NewCSR(key, "laptop", RoleNode)
	tok, _, _ := NewToken(ca.Fingerprint(), TokenOptions{}, now)
	req, _ = EncodeJoinRequest(&JoinRequest{TokenID: tok.ID, Secret: tok.Secret, Name: "laptop", CSR: csr})
	renew, _ = EncodeRenewRequest(&RenewRequest{CSR: csr})
	cert, _ := ca.Issue(key.Public(), "laptop", RoleNode, 0, now)
	caPEM, _ := keyPEM(ca.Key)
	resp, _ = EncodeJoinResponse(&JoinResponse{Name: "laptop", Role: RoleNode, Cert: cert.Raw, Roots: [][]byte{ca.Cert.Raw},
		Keyring: []byte("k"), CA: append(certPEM(ca.Cert), caPEM...)})
	return req, renew, resp, now
}

func typed(err error, sentinels ...error) bool {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

func FuzzDecodeJoinRequest(f *testing.F) {
	req, _, _, _ := fuzzSeeds(f)
	f.Add(req)
	f.Add([]byte(`{"v":1}`))
	f.Add([]byte(`{"v":1,"token_id":"aaaaaaaa","secret":"","name":"x","csr":"AA=="}`))
	f.Add([]byte(`{"v":1}{"v":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, csr, err := DecodeJoinRequest(b)
		if err != nil {
			if !typed(err, ErrBadMessage, ErrTooLarge, ErrBadToken, ErrBadName, ErrBadCSR) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if ValidName(r.Name) != nil || csr.CheckSignature() != nil || len(b) > MaxJoinRequest {
			t.Fatal("accepted an invalid request")
		}
	})
}

func FuzzDecodeRenewRequest(f *testing.F) {
	_, renew, _, _ := fuzzSeeds(f)
	f.Add(renew)
	f.Add([]byte(`{"v":1,"csr":""}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		csr, err := DecodeRenewRequest(b)
		if err != nil {
			if !typed(err, ErrBadMessage, ErrTooLarge, ErrBadCSR) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if csr.CheckSignature() != nil {
			t.Fatal("accepted a bad CSR")
		}
	})
}

func FuzzParseCSR(f *testing.F) {
	key, _ := NewKey()
	csr, _ := NewCSR(key, "laptop", RoleServer)
	f.Add(csr)
	f.Add([]byte{0x30, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := ParseCSR(b); err != nil && !errors.Is(err, ErrBadCSR) {
			t.Fatalf("untyped error %v", err)
		}
	})
}

func FuzzDecodeJoinResponse(f *testing.F) {
	_, _, resp, now := fuzzSeeds(f)
	f.Add(resp)
	f.Add([]byte(`{"v":1,"roots":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodeJoinResponse(b, now)
		if err != nil {
			if !typed(err, ErrBadMessage, ErrTooLarge) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if _, err := p.Cert.Verify(x509.VerifyOptions{Roots: p.Roots.Pool(), CurrentTime: now,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
			t.Fatalf("accepted a certificate that does not verify: %v", err)
		}
	})
}

func FuzzParseRoots(f *testing.F) {
	ca, _ := NewCA(time.Unix(1e9, 0), 0)
	f.Add(certPEM(ca.Cert))
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseRoots(b)
		if err != nil {
			if !errors.Is(err, ErrBadPEM) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		for _, c := range r.Certs() {
			if !c.IsCA {
				t.Fatal("accepted a non-CA root")
			}
		}
	})
}

func FuzzParseCAPEM(f *testing.F) {
	ca, _ := NewCA(time.Unix(1e9, 0), 0)
	k, _ := keyPEM(ca.Key)
	f.Add(append(certPEM(ca.Cert), k...))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParseCAPEM(b)
		if err != nil {
			if !errors.Is(err, ErrBadPEM) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if !publicKeysEqual(got.Cert.PublicKey, got.Key.Public()) {
			t.Fatal("accepted a key that does not match")
		}
	})
}

func FuzzCertIdentity(f *testing.F) {
	ca, _ := NewCA(time.Unix(1e9, 0), 0)
	key, _ := NewKey()
	c, _ := ca.Issue(key.Public(), "laptop", RoleNode, 0, time.Unix(1e9, 0))
	f.Add(c.Raw)
	f.Fuzz(func(t *testing.T, der []byte) {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return
		}
		id, err := CertIdentity(c)
		if err != nil {
			if !errors.Is(err, ErrNoIdentity) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if ValidName(id.Name) != nil {
			t.Fatalf("accepted name %q", id.Name)
		}
	})
}
