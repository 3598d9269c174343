package acttoken

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/harn-dev/harn/util/clock"
)

var t0 = time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// memKV is the ledger's meta keys in memory.
type memKV struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (k *memKV) PutMeta(key string, v []byte) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string][]byte{}
	}
	k.m[key] = append([]byte(nil), v...)
	return nil
}

func (k *memKV) GetMeta(key string) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]byte(nil), k.m[key]...), nil
}

func TestATokenDecidesOnceItsRequestAndDecisionOnly(t *testing.T) {
	clk := clock.NewFake(t0)
	s := Open(Config{Clock: clk, Logger: quiet()})
	yes, err := s.Mint("r-1", Allow)
	if err != nil {
		t.Fatal(err)
	}
	no, _ := s.Mint("r-1", Deny)
	if !strings.HasPrefix(yes, Prefix) || len(yes) != tokenLen || yes == no {
		t.Fatalf("tokens %q %q", yes, no)
	}
	for _, c := range []struct {
		tok, req string
		d        Decision
		want     error
	}{
		{yes, "r-2", Allow, ErrOtherRequest},
		{yes, "r-1", Deny, ErrOtherDecision},
		{no, "r-1", Allow, ErrOtherDecision},
		{Prefix + strings.Repeat("A", 43), "r-1", Allow, ErrInvalid},
		{"board-token-of-sixteen+", "r-1", Allow, ErrInvalid},
		{"", "r-1", Allow, ErrInvalid},
	} {
		if err := s.Use(c.tok, c.req, c.d); !errors.Is(err, c.want) {
			t.Fatalf("use %q on %s/%s: %v, want %v", c.tok, c.req, c.d, err, c.want)
		}
	}
	if err := s.Use(yes, "r-1", Allow); err != nil {
		t.Fatalf("the token's own use: %v", err)
	}
	if err := s.Use(yes, "r-1", Allow); !errors.Is(err, ErrSpent) {
		t.Fatalf("a second use: %v, want ErrSpent", err)
	}
}

func TestATokenExpiresAfterItsTTL(t *testing.T) {
	clk := clock.NewFake(t0)
	s := Open(Config{Clock: clk, TTL: 10 * time.Minute, Logger: quiet()})
	tok, _ := s.Mint("r-1", Allow)
	clk.Advance(10 * time.Minute)
	if err := s.Use(tok, "r-1", Allow); !errors.Is(err, ErrExpired) {
		t.Fatalf("after the TTL: %v, want ErrExpired", err)
	}
	if err := s.Use(tok, "r-1", Allow); !errors.Is(err, ErrInvalid) {
		t.Fatalf("an expired token is forgotten: %v, want ErrInvalid", err)
	}
	if Open(Config{TTL: 1000 * time.Hour}).cfg.TTL != MaxTTL {
		t.Fatal("a TTL past MaxTTL is not bounded")
	}
}

func TestATokenEndsWithItsRequest(t *testing.T) {
	s := Open(Config{Clock: clock.NewFake(t0), Logger: quiet()})
	a, _ := s.Mint("r-1", Allow)
	b, _ := s.Mint("r-2", Allow)
	s.Retain(func(id string) bool { return id == "r-2" })
	if err := s.Use(a, "r-1", Allow); !errors.Is(err, ErrClosed) {
		t.Fatalf("a token of a closed request: %v, want ErrClosed", err)
	}
	if err := s.Use(b, "r-2", Allow); err != nil {
		t.Fatalf("a token of an open request: %v", err)
	}
	// A spent token stays spent when its request closes.
	s.Retain(func(string) bool { return false })
	if err := s.Use(b, "r-2", Allow); !errors.Is(err, ErrSpent) {
		t.Fatalf("spent, then closed: %v, want ErrSpent", err)
	}
}

func TestTheStoreIsBounded(t *testing.T) {
	clk := clock.NewFake(t0)
	s := Open(Config{Clock: clk, Max: 4, Logger: quiet()})
	first, _ := s.Mint("r-0", Allow)
	for i := range 10 {
		clk.Advance(time.Second)
		if _, err := s.Mint("r-"+string(rune('a'+i)), Deny); err != nil {
			t.Fatal(err)
		}
	}
	if s.Len() != 4 {
		t.Fatalf("%d tokens kept, want 4", s.Len())
	}
	if err := s.Use(first, "r-0", Allow); !errors.Is(err, ErrInvalid) {
		t.Fatalf("the oldest token is pushed out: %v, want ErrInvalid", err)
	}
	for _, bad := range [][2]string{{"", "allow"}, {"r-1", "maybe"}, {strings.Repeat("r", MaxRequestID+1), "allow"}} {
		if _, err := s.Mint(bad[0], Decision(bad[1])); !errors.Is(err, ErrBadRequest) {
			t.Fatalf("mint %q: %v", bad, err)
		}
	}
}

// The tokens are kept in the KV as hashes: a restarted node still refuses
// a spent token, still takes a live one, and the KV never holds a token.
func TestTokensSurviveARestartAsHashes(t *testing.T) {
	clk, kv := clock.NewFake(t0), &memKV{}
	s := Open(Config{Clock: clk, KV: kv, Logger: quiet()})
	spent, _ := s.Mint("r-1", Allow)
	live, _ := s.Mint("r-1", Deny)
	if err := s.Use(spent, "r-1", Allow); err != nil {
		t.Fatal(err)
	}
	raw, _ := kv.GetMeta(MetaKey)
	if strings.Contains(string(raw), spent[len(Prefix):]) || strings.Contains(string(raw), live[len(Prefix):]) {
		t.Fatalf("the KV holds a token: %s", raw)
	}
	s2 := Open(Config{Clock: clk, KV: kv, Logger: quiet()})
	if err := s2.Use(spent, "r-1", Allow); !errors.Is(err, ErrSpent) {
		t.Fatalf("after a restart, the spent token: %v", err)
	}
	if err := s2.Use(live, "r-1", Deny); err != nil {
		t.Fatalf("after a restart, the live token: %v", err)
	}
	// Unreadable kept data: every token refused.
	_ = kv.PutMeta(MetaKey, []byte(`{"version":2,"tokens":[]}`))
	if Open(Config{Clock: clk, KV: kv, Logger: quiet()}).Len() != 0 {
		t.Fatal("a newer version was read")
	}
}

// TestPropertyATokenIsAcceptedAtMostOnceForItsRequestAndDecision: over any
// sequence of mints, uses (of minted, forged and mixed-up tokens),
// requests closing and time passing, Use accepts a token only when a
// model written from the rule says so: minted for that request and that
// decision, not expired, its request still open, and never accepted
// before.
func TestPropertyATokenIsAcceptedAtMostOnceForItsRequestAndDecision(t *testing.T) {
	const ttl = time.Minute
	rapid.Check(t, func(rt *rapid.T) {
		clk := clock.NewFake(t0)
		s := Open(Config{Clock: clk, TTL: ttl, Max: 1000, KV: &memKV{}, Logger: quiet()})
		type minted struct {
			tok, req string
			d        Decision
			at       time.Time
		}
		var toks []minted
		accepted := map[string]bool{}
		closed := map[string]bool{}
		reqs := []string{"r-a", "r-b", "r-c"}
		decs := []Decision{Allow, Deny}
		for range rapid.IntRange(1, 60).Draw(rt, "steps") {
			switch rapid.IntRange(0, 4).Draw(rt, "op") {
			case 0:
				req := rapid.SampledFrom(reqs).Draw(rt, "req")
				d := rapid.SampledFrom(decs).Draw(rt, "d")
				if closed[req] {
					continue // tokens are minted for open requests only
				}
				tok, err := s.Mint(req, d)
				if err != nil {
					rt.Fatal(err)
				}
				toks = append(toks, minted{tok, req, d, clk.Now()})
			case 1, 2:
				if len(toks) == 0 {
					continue
				}
				m := toks[rapid.IntRange(0, len(toks)-1).Draw(rt, "which")]
				req, d := m.req, m.d
				if rapid.Bool().Draw(rt, "otherReq") {
					req = rapid.SampledFrom(reqs).Draw(rt, "req2")
				}
				if rapid.Bool().Draw(rt, "otherDec") {
					d = rapid.SampledFrom(decs).Draw(rt, "d2")
				}
				tok := m.tok
				if rapid.IntRange(0, 5).Draw(rt, "forge") == 0 {
					tok = tok[:len(tok)-1] + "x"
				}
				want := tok == m.tok && req == m.req && d == m.d && !accepted[m.tok] &&
					clk.Now().Sub(m.at) < ttl && !closed[m.req]
				err := s.Use(tok, req, d)
				if (err == nil) != want {
					rt.Fatalf("use of %s/%s as %s/%s (forged %v, used %v, age %v, closed %v): %v",
						m.req, m.d, req, d, tok != m.tok, accepted[m.tok], clk.Now().Sub(m.at), closed[m.req], err)
				}
				if err == nil {
					accepted[m.tok] = true
				}
			case 3:
				req := rapid.SampledFrom(reqs).Draw(rt, "close")
				closed[req] = true
				s.Retain(func(id string) bool { return !closed[id] })
			case 4:
				clk.Advance(time.Duration(rapid.IntRange(1, 40).Draw(rt, "secs")) * time.Second)
			}
		}
	})
}
