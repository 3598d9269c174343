package board

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const secret = "s3cret-token"

func tokenServer(t *testing.T) *Server {
	s, _, _ := newTestServer(t, func(c *Config) { c.Addr = "0.0.0.0:0"; c.Token = secret })
	return s
}

func TestNewRefusesNonLoopbackWithoutToken(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:7713", ":7713", "192.168.1.10:7713", "[::]:7713", "example.com:7713"} {
		if _, err := New(Config{Addr: addr, Source: newFake()}); !errors.Is(err, ErrTokenRequired) {
			t.Errorf("%s: %v, want ErrTokenRequired", addr, err)
		}
	}
	for _, addr := range []string{"", "127.0.0.1:7713", "localhost:0", "[::1]:7713", "127.0.0.2:1"} {
		if _, err := New(Config{Addr: addr, Source: newFake()}); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
	if _, err := New(Config{Addr: "0.0.0.0:7713", Token: "t", Source: newFake()}); err != nil {
		t.Errorf("with a token: %v", err)
	}
	if _, err := New(Config{Addr: "nonsense", Source: newFake()}); !errors.Is(err, ErrBadAddr) {
		t.Errorf("bad addr: %v", err)
	}
	if _, err := New(Config{}); !errors.Is(err, ErrNoSource) {
		t.Errorf("no source: %v", err)
	}
}

func TestRequestWithoutTokenGets401AndNothingElse(t *testing.T) {
	s := tokenServer(t)
	for _, p := range []string{"/", "/fragment", "/events", "/s/s-need", "/s/s-ended/fragment", "/static/board.js", "/nope"} {
		for _, hdr := range []map[string]string{nil, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic " + secret},
			{"Cookie": cookieName + "=" + secret}, {"Cookie": cookieName + "=x"}} {
			w := do(t, s.Handler(), http.MethodGet, p, nil, hdr)
			if w.Code != http.StatusUnauthorized {
				t.Errorf("%s %v: %d", p, hdr, w.Code)
			}
			if w.Body.Len() != 0 {
				t.Errorf("%s %v: 401 with a body: %q", p, hdr, w.Body.String())
			}
		}
	}
	w := post(t, s, form(s, "kind", "approve", "session", "s-need", "request", "req-1", "confirmed", "1"), nil)
	if w.Code != http.StatusUnauthorized || w.Body.Len() != 0 {
		t.Errorf("POST: %d %q", w.Code, w.Body.String())
	}
	w = do(t, s.Handler(), http.MethodGet, "/?token=wrong", nil, nil)
	if w.Code != http.StatusUnauthorized || w.Body.Len() != 0 || w.Header().Get("Set-Cookie") != "" {
		t.Errorf("wrong ?token=: %d %q", w.Code, w.Header().Get("Set-Cookie"))
	}
}

func TestBearerTokenOpensTheBoard(t *testing.T) {
	s := tokenServer(t)
	w := do(t, s.Handler(), http.MethodGet, "/", nil, map[string]string{"Authorization": "Bearer " + secret})
	if w.Code != 200 || len(cardsIn(w.Body.String())) != 6 {
		t.Fatalf("%d", w.Code)
	}
}

func TestTokenQuerySetsStrictCookieAndRedirects(t *testing.T) {
	s := tokenServer(t)
	w := do(t, s.Handler(), http.MethodGet, "/?node=alpha&token="+secret, nil, nil)
	if w.Code != http.StatusSeeOther {
		t.Fatalf("status %d", w.Code)
	}
	if loc := w.Header().Get("Location"); loc != "/?node=alpha" {
		t.Fatalf("redirect to %q keeps or loses the wrong part", loc)
	}
	res := http.Response{Header: w.Header()}
	cs := res.Cookies()
	if len(cs) != 1 {
		t.Fatalf("cookies %v", cs)
	}
	c := cs[0]
	if c.Name != cookieName || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Value == secret || c.Path != "/" {
		t.Fatalf("cookie %+v", c)
	}
	w = do(t, s.Handler(), http.MethodGet, "/?node=alpha", nil, map[string]string{"Cookie": c.Name + "=" + c.Value})
	if w.Code != 200 || strings.Join(cardsIn(w.Body.String()), " ") != "s-work s-idle" {
		t.Fatalf("with the cookie: %d", w.Code)
	}
}

func TestLoopbackBoardRefusesForeignHostHeader(t *testing.T) {
	s, _, _ := newTestServer(t, nil)
	for host, want := range map[string]int{"127.0.0.1:7713": 200, "localhost:7713": 200, "[::1]:7713": 200,
		"evil.example:7713": http.StatusMisdirectedRequest, "attacker.test": http.StatusMisdirectedRequest} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Host = host
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, req)
		if w.Code != want {
			t.Errorf("Host %s: %d want %d", host, w.Code, want)
		}
		if want != 200 && strings.Contains(w.Body.String(), "s-need") {
			t.Errorf("Host %s: roster leaked", host)
		}
	}
}

func TestURLCarriesTheToken(t *testing.T) {
	s, _, _ := newTestServer(t, func(c *Config) { c.Addr = "127.0.0.1:7713" })
	if u := s.URL(); u != "http://127.0.0.1:7713/" {
		t.Errorf("URL %q", u)
	}
	s2, _, _ := newTestServer(t, func(c *Config) { c.Addr = "0.0.0.0:8000"; c.Token = "a b&c" })
	if u := s2.URL(); u != "http://127.0.0.1:8000/?token=a+b%26c" {
		t.Errorf("URL %q", u)
	}
}

func TestTokenEqualContract(t *testing.T) {
	// equal wraps subtle.ConstantTimeCompare; this pins its contract.
	for _, c := range []struct {
		a, b string
		want bool
	}{{"abc", "abc", true}, {"abc", "abd", false}, {"abc", "ab", false}, {"", "", true}} {
		if equal(c.a, c.b) != c.want {
			t.Errorf("equal(%q,%q)", c.a, c.b)
		}
	}
}
