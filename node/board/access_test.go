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

// TestNewRefusesABoardWithoutAToken: every board needs a token, on
// loopback too.
func TestNewRefusesABoardWithoutAToken(t *testing.T) {
	for _, addr := range []string{"", "127.0.0.1:7713", "localhost:0", "[::1]:7713", "0.0.0.0:7713", ":7713", "192.168.1.10:7713"} {
		if _, err := New(Config{Addr: addr, Source: newFake()}); !errors.Is(err, ErrTokenRequired) {
			t.Errorf("%s: %v, want ErrTokenRequired", addr, err)
		}
		if _, err := New(Config{Addr: addr, Token: secret, Source: newFake()}); err != nil {
			t.Errorf("%s with a token: %v", addr, err)
		}
	}
	if _, err := New(Config{Addr: "nonsense", Token: secret, Source: newFake()}); !errors.Is(err, ErrBadAddr) {
		t.Errorf("bad addr: %v", err)
	}
	if _, err := New(Config{}); !errors.Is(err, ErrNoSource) {
		t.Errorf("no source: %v", err)
	}
}

// TestRequestWithoutTokenGets401AndNothingElse: on loopback and beyond,
// a request without the token (or with a wrong one, or the token itself
// as the cookie) gets 401 with the short page that says to run `harn web
// open`, and the connection closes; no roster byte leaves.
func TestRequestWithoutTokenGets401AndNothingElse(t *testing.T) {
	loop, _, _ := newTestServer(t, nil)
	for _, s := range []*Server{loop, tokenServer(t)} {
		for _, p := range []string{"/", "/fragment", "/events", "/s/s-need", "/s/s-ended/fragment", "/static/board.js", "/metrics", "/nope"} {
			for _, hdr := range []map[string]string{{"Cookie": ""}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic " + secret},
				{"Cookie": s.cookieName + "=" + secret}, {"Cookie": s.cookieName + "=x"}, {"Authorization": "Bearer wrong", "Cookie": s.cookieName + "=" + s.cookie}} {
				w := do(t, s.Handler(), http.MethodGet, p, nil, hdr)
				if w.Code != http.StatusUnauthorized {
					t.Errorf("%s %s %v: %d", s.cfg.Addr, p, hdr, w.Code)
				}
				if w.Body.String() != unauthorizedPage || w.Header().Get("Connection") != "close" {
					t.Errorf("%s %s %v: 401 with body %q, Connection %q", s.cfg.Addr, p, hdr, w.Body.String(), w.Header().Get("Connection"))
				}
			}
		}
		w := post(t, s, form(s, "kind", "approve", "session", "s-need", "request", "req-1", "confirmed", "1"), map[string]string{"Cookie": ""})
		if w.Code != http.StatusUnauthorized || strings.Contains(w.Body.String(), "s-need") {
			t.Errorf("POST: %d %q", w.Code, w.Body.String())
		}
		w = do(t, s.Handler(), http.MethodGet, "/?token=wrong", nil, map[string]string{"Cookie": ""})
		if w.Code != http.StatusUnauthorized || w.Header().Get("Set-Cookie") != "" {
			t.Errorf("wrong ?token=: %d %q", w.Code, w.Header().Get("Set-Cookie"))
		}
	}
	if !strings.Contains(unauthorizedPage, "harn web open") {
		t.Error("the 401 page does not say to run harn web open")
	}
}

func TestBearerTokenOpensTheBoard(t *testing.T) {
	s := tokenServer(t)
	w := do(t, s.Handler(), http.MethodGet, "/", nil, map[string]string{"Authorization": "Bearer " + secret})
	if w.Code != 200 || len(cardsIn(w.Body.String())) != 6 {
		t.Fatalf("%d", w.Code)
	}
	w = do(t, s.Handler(), http.MethodGet, "/", nil, map[string]string{"Authorization": "bearer  " + secret + " "})
	if w.Code != 200 || len(cardsIn(w.Body.String())) != 6 {
		t.Fatalf("%d", w.Code)
	}
}

func TestTokenQuerySetsStrictCookieAndRedirects(t *testing.T) {
	s, _, _ := newTestServer(t, nil) // a loopback board: the same rules
	nav := map[string]string{"Cookie": "", "Sec-Fetch-Mode": "navigate"}
	w := do(t, s.Handler(), http.MethodGet, "/?node=alpha&token="+secret, nil, nav)
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
	if c.Name != s.cookieName || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Value == secret || c.Path != "/" {
		t.Fatalf("cookie %+v", c)
	}
	w = do(t, s.Handler(), http.MethodGet, "/?node=alpha", nil, map[string]string{"Cookie": c.Name + "=" + c.Value})
	if w.Code != 200 || strings.Join(cardsIn(w.Body.String()), " ") != "s-work s-idle" {
		t.Fatalf("with the cookie: %d", w.Code)
	}
	// The token leaves the address even for a browser that holds the
	// cookie already, and a wrong one sets nothing.
	for _, tok := range []string{secret, "wrong"} {
		w = do(t, s.Handler(), http.MethodGet, "/s/s-need?token="+tok, nil, map[string]string{"Sec-Fetch-Mode": "navigate"})
		if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/s/s-need" {
			t.Errorf("?token=%s with the cookie: %d to %q", tok, w.Code, w.Header().Get("Location"))
		}
		if set := w.Header().Get("Set-Cookie") != ""; set != (tok == secret) {
			t.Errorf("?token=%s with the cookie: Set-Cookie %q", tok, w.Header().Get("Set-Cookie"))
		}
	}
}

// TestTokenRedirectStaysOnTheBoard: the redirect that drops ?token=
// never points at another host, whatever the path.
func TestTokenRedirectStaysOnTheBoard(t *testing.T) {
	s, _, _ := newTestServer(t, nil)
	for _, p := range []string{"//evil.example/x", "/\\evil.example", "///evil.example"} {
		req := httptest.NewRequest(http.MethodGet, "/?token=wrong", nil)
		req.URL.Path = p
		req.Host = localHost
		req.Header.Set("Sec-Fetch-Mode", "navigate")
		req.AddCookie(&http.Cookie{Name: s.cookieName, Value: s.cookie})
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, req)
		loc := w.Header().Get("Location")
		if w.Code != http.StatusSeeOther || !strings.HasPrefix(loc, "/") || strings.HasPrefix(loc, "//") || strings.HasPrefix(loc, "/\\") {
			t.Errorf("%q: %d to %q", p, w.Code, loc)
		}
	}
}

// TestTokenQueryFromANonBrowserAnswers200: a client that is not
// navigating a browser tab (curl, a script: no Sec-Fetch-Mode) gets the
// page at once with the cookie, so `curl "$(harn web url)"` answers 200.
func TestTokenQueryFromANonBrowserAnswers200(t *testing.T) {
	s, _, _ := newTestServer(t, nil)
	w := do(t, s.Handler(), http.MethodGet, "/?node=alpha&token="+secret, nil, map[string]string{"Cookie": ""})
	if w.Code != 200 || strings.Join(cardsIn(w.Body.String()), " ") != "s-work s-idle" {
		t.Fatalf("?token= from curl: %d, cards %v", w.Code, cardsIn(w.Body.String()))
	}
	cs := (&http.Response{Header: w.Header()}).Cookies()
	if len(cs) != 1 || cs[0].Name != s.cookieName || cs[0].Value != s.cookie || !cs[0].HttpOnly || cs[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookies %v", cs)
	}
	if strings.Contains(w.Body.String(), secret) {
		t.Fatal("the page repeats the token")
	}
}

// TestBoardsOnOneHostKeepTheirOwnCookies: cookies do not tell ports
// apart, so two boards of one host (two tokens) name their cookies apart,
// and one's cookie does not open the other.
func TestBoardsOnOneHostKeepTheirOwnCookies(t *testing.T) {
	a, _, _ := newTestServer(t, nil)
	b, _, _ := newTestServer(t, func(c *Config) { c.Token = "another-token-0123456789" })
	if a.cookieName == b.cookieName || !strings.HasPrefix(a.cookieName, cookiePrefix) {
		t.Fatalf("cookie names %q and %q", a.cookieName, b.cookieName)
	}
	w := do(t, b.Handler(), http.MethodGet, "/", nil, map[string]string{"Cookie": a.cookieName + "=" + a.cookie + "; " + b.cookieName + "=" + a.cookie})
	if w.Code != http.StatusUnauthorized {
		t.Fatalf("a's cookie opened b: %d", w.Code)
	}
}

// TestScrapeTokenOpensMetricsOnly: the scrape-only token opens GET
// /metrics as a bearer header, and nothing else; the board's token opens
// /metrics too.
func TestScrapeTokenOpensMetricsOnly(t *testing.T) {
	const scrape = "scrape-token-0123456789"
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("harn_up 1\n")) })
	s, _, acts := newTestServer(t, func(c *Config) { c.MetricsToken = scrape; c.Metrics = metrics })
	for _, c := range []struct {
		method, path, auth string
		code               int
	}{
		{"GET", "/metrics", "Bearer " + scrape, 200},
		{"GET", "/metrics", "Bearer " + secret, 200},
		{"GET", "/metrics", "Bearer wrong", 401},
		{"GET", "/", "Bearer " + scrape, 403},
		{"GET", "/fragment", "Bearer " + scrape, 403},
		{"GET", "/events", "Bearer " + scrape, 403},
		{"GET", "/metrics?token=" + scrape, "", 401},
		{"POST", "/action", "Bearer " + scrape, 403},
	} {
		hdr := map[string]string{"Authorization": c.auth, "Origin": "", "Content-Type": "application/x-www-form-urlencoded"}
		body := strings.NewReader(form(s, "kind", "approve", "session", "s-need", "request", "req-1", "confirmed", "1"))
		w := do(t, s.Handler(), c.method, c.path, body, hdr)
		if w.Code != c.code {
			t.Errorf("%s %s with %q: %d, want %d", c.method, c.path, c.auth, w.Code, c.code)
		}
		if c.code != 200 && strings.Contains(w.Body.String(), "s-need") {
			t.Errorf("%s %s with %q: the roster leaked", c.method, c.path, c.auth)
		}
	}
	w := do(t, s.Handler(), "GET", "/metrics", nil, map[string]string{"Cookie": s.cookieName + "=" + cookieValue(scrape)})
	if w.Code != 401 {
		t.Errorf("the scrape token as a cookie: %d", w.Code)
	}
	if len(acts.log()) != 0 {
		t.Fatalf("the scrape token acted: %v", acts.log())
	}
}

func TestLoopbackBoardRefusesForeignHostHeader(t *testing.T) {
	s, _, _ := newTestServer(t, nil)
	for host, want := range map[string]int{"127.0.0.1:7713": 200, "localhost:7713": 200, "[::1]:7713": 200,
		"evil.example:7713": http.StatusMisdirectedRequest, "attacker.test": http.StatusMisdirectedRequest} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Host = host
		req.AddCookie(&http.Cookie{Name: s.cookieName, Value: s.cookie})
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
	if u := s.URL(); u != "http://127.0.0.1:7713/?token="+secret {
		t.Errorf("URL %q", u)
	}
	if u := s.BaseURL(); u != "http://127.0.0.1:7713/" {
		t.Errorf("BaseURL %q", u)
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
