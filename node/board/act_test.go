package board

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harn-dev/harn/node/acttoken"
	"github.com/harn-dev/harn/util/clock"
)

// tokenDecider is a Decider over a real token store and a set of open
// requests, answered once each, as the node's is.
type tokenDecider struct {
	store *acttoken.Store
	mu    sync.Mutex
	open  map[string]bool
	log   []string
}

func (d *tokenDecider) Decide(_ context.Context, tok, req string, dec acttoken.Decision) (string, error) {
	if err := d.store.Use(tok, req, dec); err != nil {
		return "", err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.open[req] {
		return "", fmt.Errorf("%w: %s", ErrAnswered, req)
	}
	delete(d.open, req)
	d.log = append(d.log, string(dec)+" "+req)
	return string(dec) + " " + req, nil
}

func actPost(t *testing.T, h http.Handler, tok, req, dec string, extra map[string]string) (int, result) {
	t.Helper()
	hdr := map[string]string{"Cookie": "", ActTokenHeader: tok, "Content-Type": "application/json"}
	for k, v := range extra {
		hdr[k] = v
	}
	body := fmt.Sprintf(`{"request":%q,"decision":%q}`, req, dec)
	w := do(t, h, http.MethodPost, ActPath, strings.NewReader(body), hdr)
	var res result
	if err := json.Unmarshal(w.Body.Bytes(), &res); err != nil {
		t.Fatalf("POST /act answered %d %q", w.Code, w.Body)
	}
	return w.Code, res
}

// POST /act takes a notification's action token, on its own (no board
// token, no cookie, no CSRF token), and makes that token's one decision
// once. Every other use is refused with its own status, and the token
// opens nothing else on the board.
func TestActTakesATokenForItsOneDecisionOnce(t *testing.T) {
	clk := clock.NewFake(t0)
	store := acttoken.Open(acttoken.Config{Clock: clk, TTL: time.Hour})
	dec := &tokenDecider{store: store, open: map[string]bool{"r-1": true, "r-2": true}}
	s, _, acts := newTestServer(t, func(c *Config) { c.Decider = dec })
	h := s.Handler()
	yes1, _ := store.Mint("r-1", acttoken.Allow)
	no1, _ := store.Mint("r-1", acttoken.Deny)
	yes2, _ := store.Mint("r-2", acttoken.Allow)
	late, _ := store.Mint("r-2", acttoken.Deny)

	cases := []struct {
		what, tok, req, dec string
		want                int
	}{
		{"a forged token", acttoken.Prefix + strings.Repeat("Z", 43), "r-1", "allow", http.StatusForbidden},
		{"the board's own token", secret, "r-1", "allow", http.StatusForbidden},
		{"a token for another request", yes2, "r-1", "allow", http.StatusForbidden},
		{"a token used for the other decision", yes1, "r-1", "deny", http.StatusForbidden},
		{"no token", "", "r-1", "allow", http.StatusUnauthorized},
		{"a bad decision", yes1, "r-1", "maybe", http.StatusBadRequest},
		{"the token's own use", yes1, "r-1", "allow", http.StatusOK},
		{"a replay", yes1, "r-1", "allow", http.StatusConflict},
		{"the other button once the request is answered", no1, "r-1", "deny", http.StatusConflict},
	}
	for _, c := range cases {
		code, res := actPost(t, h, c.tok, c.req, c.dec, nil)
		if code != c.want || (code == http.StatusOK) != res.OK || res.Message == "" {
			t.Fatalf("%s: %d %+v, want %d", c.what, code, res, c.want)
		}
	}
	clk.Advance(time.Hour)
	if code, res := actPost(t, h, yes2, "r-2", "allow", nil); code != http.StatusGone || !strings.Contains(res.Message, "expired") {
		t.Fatalf("an expired token: %d %+v, want 410", code, res)
	}
	if dec.log[0] != "allow r-1" || len(dec.log) != 1 {
		t.Fatalf("decisions %v, want [allow r-1]", dec.log)
	}
	_ = late

	// The token opens nothing else: not the board as a bearer, not as
	// ?token=, not an action.
	fresh, _ := store.Mint("r-2", acttoken.Allow)
	for _, target := range []string{"/", "/s/s-need", "/?token=" + fresh} {
		if w := do(t, h, http.MethodGet, target, nil, map[string]string{"Authorization": "Bearer " + fresh}); w.Code != http.StatusUnauthorized {
			t.Fatalf("GET %s with an action token: %d", target, w.Code)
		}
		if w := do(t, h, http.MethodGet, target, nil, map[string]string{"Cookie": "", ActTokenHeader: fresh}); w.Code != http.StatusUnauthorized {
			t.Fatalf("GET %s with an action token header: %d", target, w.Code)
		}
	}
	form := "kind=approve&session=s-need&request=r-2&confirmed=1"
	if w := do(t, h, http.MethodPost, "/action", strings.NewReader(form), map[string]string{"Cookie": "", ActTokenHeader: fresh,
		"Authorization": "Bearer " + fresh, "Content-Type": "application/x-www-form-urlencoded"}); w.Code != http.StatusUnauthorized {
		t.Fatalf("POST /action with an action token: %d", w.Code)
	}
	if len(acts.log()) != 0 {
		t.Fatalf("an action ran: %v", acts.log())
	}
	// The token is still good for its own decision after all that.
	if code, _ := actPost(t, h, fresh, "r-2", "allow", nil); code != http.StatusOK {
		t.Fatalf("the fresh token's own use: %d", code)
	}
	// GET is not a decision.
	if w := do(t, h, http.MethodGet, ActPath, nil, map[string]string{"Cookie": "", ActTokenHeader: fresh}); w.Code != http.StatusMethodNotAllowed {
		t.Fatalf("GET /act: %d", w.Code)
	}
}

// A body that is not the request and decision, or is too big, is refused
// before the token is looked at; a board without a Decider has no /act.
func TestActRefusesBadBodiesAndABoardWithoutDecider(t *testing.T) {
	store := acttoken.Open(acttoken.Config{Clock: clock.NewFake(t0)})
	dec := &tokenDecider{store: store, open: map[string]bool{"r-1": true}}
	s, _, _ := newTestServer(t, func(c *Config) { c.Decider = dec })
	tok, _ := store.Mint("r-1", acttoken.Allow)
	for _, body := range []string{"", "allow", `{"request":"r-1","decision":"allow","extra":1}`,
		`{"request":"r-1","decision":"allow","pad":"` + strings.Repeat("x", 2000) + `"}`} {
		w := do(t, s.Handler(), http.MethodPost, ActPath, strings.NewReader(body), map[string]string{"Cookie": "", ActTokenHeader: tok})
		if w.Code != http.StatusBadRequest {
			t.Fatalf("body %.40q: %d", body, w.Code)
		}
	}
	if code, _ := actPost(t, s.Handler(), tok, "r-1", "allow", nil); code != http.StatusOK {
		t.Fatalf("after the bad bodies the token is unspent: %d", code)
	}
	bare, _, _ := newTestServer(t, nil)
	if code, _ := actPost(t, bare.Handler(), tok, "r-1", "allow", nil); code != http.StatusNotFound {
		t.Fatalf("a board without a Decider: %d", code)
	}
}
