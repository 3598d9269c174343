package trust

import (
	"crypto"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestCAKeyPersistedPrivate(t *testing.T) {
	m := newTestMesh(t)
	if got := mode(t, m.dir); got != 0o700 {
		t.Fatalf("trust dir mode %o, want 700", got)
	}
	for _, f := range []string{FileCAKey, FileRoots} {
		if got := mode(t, filepath.Join(m.dir, f)); got != 0o600 {
			t.Fatalf("%s mode %o, want 600", f, got)
		}
	}
	if m.a.CA().Cert.NotAfter.Sub(m.clk.Now()) < 9*365*24*time.Hour {
		t.Fatalf("CA lifetime too short: ends %v", m.a.CA().Cert.NotAfter)
	}
}

func TestCADirTightenedWhenItExistsWide(t *testing.T) {
	m := newTestMesh(t)
	os.Chmod(m.dir, 0o755)
	os.Chmod(filepath.Join(m.dir, FileRoots), 0o644)
	os.Chmod(filepath.Join(m.dir, FileCAKey), 0o644)
	a, created, err := InitAuthority(m.dir, m.clk)
	if err != nil || created {
		t.Fatalf("reload: created=%v err=%v", created, err)
	}
	if !a.Fingerprint().Equal(m.a.Fingerprint()) {
		t.Fatal("reload made a new CA instead of loading the existing one")
	}
	if mode(t, m.dir) != 0o700 || mode(t, filepath.Join(m.dir, FileCAKey)) != 0o600 || mode(t, filepath.Join(m.dir, FileRoots)) != 0o600 {
		t.Fatal("existing wide modes were not tightened")
	}
}

func TestFingerprintIsSHA256OfCADER(t *testing.T) {
	m := newTestMesh(t)
	sum := sha256.Sum256(m.a.CA().Cert.Raw)
	fp := m.a.Fingerprint()
	if fp.Hex() != hex.EncodeToString(sum[:]) || fp.String() != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Fatalf("fingerprint %s does not match sha256 of DER", fp)
	}
	for _, s := range []string{fp.String(), fp.Hex(), strings.ToUpper(fp.Hex())} {
		got, err := ParseFingerprint(s)
		if err != nil || !got.Equal(fp) {
			t.Fatalf("ParseFingerprint(%q) = %v, %v", s, got, err)
		}
	}
}

func TestRotateKeepsOldCATrustedUntilFinished(t *testing.T) {
	m := newTestMesh(t)
	old := m.a.Fingerprint()
	if err := m.a.FinishRotation(); !errors.Is(err, ErrRotation) {
		t.Fatalf("finish with no rotation: %v", err)
	}
	if err := m.a.Rotate(); err != nil {
		t.Fatal(err)
	}
	if err := m.a.Rotate(); !errors.Is(err, ErrRotation) {
		t.Fatalf("second rotate during overlap: %v", err)
	}
	fps := m.a.Roots().Fingerprints()
	if len(fps) != 2 || fps[0].Equal(old) || !fps[1].Equal(old) || !m.a.Rotating() {
		t.Fatalf("roots during overlap %v, want new then old %s", fps, old)
	}
	// The overlap survives a restart.
	b, err := LoadAuthority(m.dir, m.clk)
	if err != nil || len(b.Roots().Certs()) != 2 || !b.Fingerprint().Equal(fps[0]) {
		t.Fatalf("reload during overlap: %v %v", err, b.Roots().Fingerprints())
	}
	if err := m.a.FinishRotation(); err != nil {
		t.Fatal(err)
	}
	if m.a.Roots().Contains(old) || m.a.Rotating() {
		t.Fatal("old CA still trusted after FinishRotation")
	}
	r, err := LoadRoots(m.dir)
	if err != nil || r.Contains(old) {
		t.Fatalf("roots file after finish: %v", err)
	}
}

func TestCrashBetweenRotationWritesKeepsBothCAsTrusted(t *testing.T) {
	m := newTestMesh(t)
	old := m.a.CA()
	ca, err := NewCA(m.clk.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	// The key file has the new CA; the roots file still lists only the old.
	if err := InstallCA(m.dir, ca, NewRoots(old.Cert)); err != nil {
		t.Fatal(err)
	}
	if err := SaveRoots(m.dir, NewRoots(old.Cert)); err != nil {
		t.Fatal(err)
	}
	a, err := LoadAuthority(m.dir, m.clk)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Roots().Contains(old.Fingerprint()) || !a.Roots().Contains(ca.Fingerprint()) || !a.Fingerprint().Equal(ca.Fingerprint()) {
		t.Fatal("a half-written rotation lost a CA")
	}
}

func TestLoadAuthorityWithoutCA(t *testing.T) {
	_, err := LoadAuthority(t.TempDir(), nil)
	if !errors.Is(err, ErrNoCA) {
		t.Fatalf("err %v, want ErrNoCA", err)
	}
}

func TestCAKeyMismatchRefused(t *testing.T) {
	m := newTestMesh(t)
	other, _ := NewCA(m.clk.Now(), 0)
	k, _ := keyPEM(other.Key)
	if err := writeFileAtomic(filepath.Join(m.dir, FileCAKey), append(certPEM(m.a.CA().Cert), k...)); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadAuthority(m.dir, m.clk); !errors.Is(err, ErrBadPEM) {
		t.Fatalf("err %v, want ErrBadPEM", err)
	}
}

func TestNodeCertSavedAndLoaded(t *testing.T) {
	m := newTestMesh(t)
	c := m.issue("laptop", RoleNode, 0)
	dir := filepath.Join(t.TempDir(), "n")
	if err := SaveNodeCert(dir, c.Leaf, c.PrivateKey.(crypto.Signer)); err != nil {
		t.Fatal(err)
	}
	if mode(t, filepath.Join(dir, FileNode)) != 0o600 || mode(t, dir) != 0o700 {
		t.Fatal("node cert file or dir too open")
	}
	got, err := LoadNodeCert(dir)
	if err != nil || SerialString(got.Leaf) != SerialString(c.Leaf) {
		t.Fatalf("LoadNodeCert: %v", err)
	}
	os.Chmod(filepath.Join(dir, FileNode), 0o644)
	if _, err := LoadNodeCert(dir); !errors.Is(err, ErrInsecureFile) {
		t.Fatalf("world-readable key loaded: %v", err)
	}
}
