package trust

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harn-dev/harn/util/clock"
)

func newStore(t *testing.T) *FileTokenStore {
	t.Helper()
	s, err := OpenFileTokenStore(filepath.Join(t.TempDir(), "data", "tokens.json"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestTokenStringRoundTrip(t *testing.T) {
	m := newTestMesh(t)
	tok, _, err := NewToken(m.a.Fingerprint(), TokenOptions{}, m.clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	s := tok.String()
	if !strings.HasPrefix(s, "harn1.") || len(s) > 130 {
		t.Fatalf("token %q", s)
	}
	for _, in := range []string{s, "  " + s + "\n", strings.ToUpper(s)} {
		got, err := ParseToken(in)
		if err != nil || got != tok {
			t.Fatalf("ParseToken(%q) = %+v, %v", in, got, err)
		}
	}
	if strings.Contains(tok.Redacted(), tok.Secret) {
		t.Fatal("redacted token shows the secret")
	}
}

func TestParseTokenRefusesMalformed(t *testing.T) {
	m := newTestMesh(t)
	tok, _, _ := NewToken(m.a.Fingerprint(), TokenOptions{}, m.clk.Now())
	good := tok.String()
	flip := []byte(good)
	flip[10] = map[bool]byte{true: 'b', false: 'a'}[flip[10] == 'a']
	for name, s := range map[string]string{
		"empty":     "",
		"prefix":    "harn2" + good[5:],
		"truncated": good[:len(good)-1],
		"typo":      string(flip),
		"parts":     good + ".x",
		"long":      strings.Repeat("a", 1000),
		"no check":  good[:strings.LastIndexByte(good, '.')],
	} {
		if _, err := ParseToken(s); !errors.Is(err, ErrBadToken) {
			t.Errorf("%s: err %v, want ErrBadToken", name, err)
		}
	}
}

func TestTokenRedeemGrantsItsRole(t *testing.T) {
	s, clk := newStore(t), clock.NewFake(time.Now())
	for _, role := range []Role{RoleNode, RoleServer} {
		tok, err := CreateToken(s, Fingerprint{}, TokenOptions{Role: role}, clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Redeem(tok.ID, tok.Secret, clk.Now())
		if err != nil || got != role {
			t.Fatalf("redeem: %v %v, want %v", got, err, role)
		}
	}
}

func TestTokenWrongSecretRefused(t *testing.T) {
	s, clk := newStore(t), clock.NewFake(time.Now())
	tok, _ := CreateToken(s, Fingerprint{}, TokenOptions{Uses: 1}, clk.Now())
	other, _, _ := NewToken(Fingerprint{}, TokenOptions{}, clk.Now())
	if _, err := s.Redeem(tok.ID, other.Secret, clk.Now()); !errors.Is(err, ErrTokenSecret) {
		t.Fatalf("err %v, want ErrTokenSecret", err)
	}
	// A wrong secret costs no use.
	if _, err := s.Redeem(tok.ID, tok.Secret, clk.Now()); err != nil {
		t.Fatal(err)
	}
}

func TestTokenUnknownIDRefused(t *testing.T) {
	s := newStore(t)
	tok, _, _ := NewToken(Fingerprint{}, TokenOptions{}, time.Now())
	if _, err := s.Redeem(tok.ID, tok.Secret, time.Now()); !errors.Is(err, ErrTokenUnknown) {
		t.Fatalf("err %v, want ErrTokenUnknown", err)
	}
}

func TestTokenPastTTLRefused(t *testing.T) {
	s, clk := newStore(t), clock.NewFake(time.Now())
	tok, _ := CreateToken(s, Fingerprint{}, TokenOptions{}, clk.Now()) // 24 h default
	clk.Advance(24*time.Hour - time.Second)
	if _, err := s.Redeem(tok.ID, tok.Secret, clk.Now()); err != nil {
		t.Fatalf("before TTL: %v", err)
	}
	clk.Advance(time.Second)
	if _, err := s.Redeem(tok.ID, tok.Secret, clk.Now()); !errors.Is(err, ErrTokenExpired) {
		t.Fatalf("err %v, want ErrTokenExpired", err)
	}
}

func TestTokenPastUsesRefused(t *testing.T) {
	s, clk := newStore(t), clock.NewFake(time.Now())
	tok, _ := CreateToken(s, Fingerprint{}, TokenOptions{Uses: 2}, clk.Now())
	for i := 0; i < 2; i++ {
		if _, err := s.Redeem(tok.ID, tok.Secret, clk.Now()); err != nil {
			t.Fatalf("use %d: %v", i+1, err)
		}
	}
	if _, err := s.Redeem(tok.ID, tok.Secret, clk.Now()); !errors.Is(err, ErrTokenUsedUp) {
		t.Fatalf("err %v, want ErrTokenUsedUp", err)
	}
}

func TestTokenUsesCountedAtomically(t *testing.T) {
	s, clk := newStore(t), clock.NewFake(time.Now())
	tok, _ := CreateToken(s, Fingerprint{}, TokenOptions{Uses: 3}, clk.Now())
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Redeem(tok.ID, tok.Secret, clk.Now()); err == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ok != 3 {
		t.Fatalf("%d redeems succeeded, want 3", ok)
	}
}

func TestTokenSecretStoredOnlyAsHash(t *testing.T) {
	s := newStore(t)
	tok, _ := CreateToken(s, Fingerprint{}, TokenOptions{}, time.Now())
	b, err := os.ReadFile(s.path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(tok.Secret)) {
		t.Fatal("the token file holds the secret in clear")
	}
	if mode(t, s.path) != 0o600 {
		t.Fatalf("token file mode %o", mode(t, s.path))
	}
}

func TestTokenStoreSurvivesReopen(t *testing.T) {
	s := newStore(t)
	now := time.Now()
	tok, _ := CreateToken(s, Fingerprint{}, TokenOptions{Uses: 1}, now)
	s2, err := OpenFileTokenStore(s.path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Redeem(tok.ID, tok.Secret, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Redeem(tok.ID, tok.Secret, now); !errors.Is(err, ErrTokenUsedUp) {
		t.Fatalf("use not persisted: %v", err)
	}
	if err := s.Revoke(tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Redeem(tok.ID, tok.Secret, now); !errors.Is(err, ErrTokenUnknown) {
		t.Fatalf("revoked token: %v", err)
	}
}

func TestTokenStoreRefusesReadableFile(t *testing.T) {
	s := newStore(t)
	CreateToken(s, Fingerprint{}, TokenOptions{}, time.Now())
	os.Chmod(s.path, 0o644)
	if _, err := OpenFileTokenStore(s.path); !errors.Is(err, ErrInsecureFile) {
		t.Fatalf("err %v, want ErrInsecureFile", err)
	}
}

func FuzzParseToken(f *testing.F) {
	tok, _, _ := NewToken(Fingerprint{1, 2, 3}, TokenOptions{}, time.Unix(0, 0))
	f.Add(tok.String())
	f.Add("harn1....")
	f.Add("harn1.aaaaaaaa.bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb." + strings.Repeat("0", 64) + ".00000000")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseToken(s)
		if err != nil {
			if !errors.Is(err, ErrBadToken) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		again, err := ParseToken(got.String())
		if err != nil || again != got {
			t.Fatalf("round trip: %+v vs %+v, %v", got, again, err)
		}
	})
}

func FuzzParseFingerprint(f *testing.F) {
	f.Add("sha256:" + strings.Repeat("ab", 32))
	f.Add("zz")
	f.Fuzz(func(t *testing.T, s string) {
		fp, err := ParseFingerprint(s)
		if err == nil {
			if again, err := ParseFingerprint(fp.String()); err != nil || !again.Equal(fp) {
				t.Fatal("round trip")
			}
		}
	})
}
