package board

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// cookieName holds the token's derived value once a browser presented
// ?token=.
const cookieName = "harn_board"

// csrfField is the form field (and csrfHeader the header) that carries the
// per-server CSRF token on every POST.
const (
	csrfField  = "csrf"
	csrfHeader = "X-Harn-Csrf"
)

func cookieValue(token string) string {
	if token == "" {
		return ""
	}
	sum := sha256.Sum256([]byte("harn-board-cookie\x00" + token))
	return hex.EncodeToString(sum[:])
}

func equal(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// guard wraps every route: it counts the handler for Close, sets the
// security headers, refuses a foreign Host on an open loopback board (DNS
// rebinding), and enforces the token.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		s.wg.Add(1)
		s.mu.Unlock()
		defer s.wg.Done()

		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-store")

		if s.cfg.Token == "" {
			// Only a loopback board runs without a token; a page on
			// another site that rebinds its name to 127.0.0.1 must not
			// read it.
			if !loopbackHostHeader(r.Host) {
				http.Error(w, "board: this board answers only to localhost", http.StatusMisdirectedRequest)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		if s.authorized(r) {
			next.ServeHTTP(w, r)
			return
		}
		if q := r.URL.Query().Get("token"); q != "" && equal(q, s.cfg.Token) && r.Method == http.MethodGet {
			http.SetCookie(w, &http.Cookie{Name: cookieName, Value: s.cookie, Path: "/",
				HttpOnly: true, SameSite: http.SameSiteStrictMode})
			v := r.URL.Query()
			v.Del("token")
			u := url.URL{Path: r.URL.Path, RawQuery: v.Encode()}
			http.Redirect(w, r, u.String(), http.StatusSeeOther)
			return
		}
		h.Set("WWW-Authenticate", `Bearer realm="harn board"`)
		w.WriteHeader(http.StatusUnauthorized)
	})
}

// authorized reports a valid bearer header or auth cookie.
func (s *Server) authorized(r *http.Request) bool {
	if a := r.Header.Get("Authorization"); a != "" {
		scheme, tok, ok := strings.Cut(a, " ")
		if ok && strings.EqualFold(scheme, "Bearer") && equal(strings.TrimSpace(tok), s.cfg.Token) {
			return true
		}
	}
	if c, err := r.Cookie(cookieName); err == nil && equal(c.Value, s.cookie) {
		return true
	}
	return false
}

func loopbackHostHeader(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return isLoopbackHost(strings.ToLower(host))
}

// sameOrigin is the CSRF check's first half: a browser's POST must come
// from a page of this board. Origin, when sent, must name this host; else
// Sec-Fetch-Site, when sent, must be same-origin; else a Referer, when
// sent, must name this host. A client that sends none of them is not a
// browser (and still needs the CSRF token).
func sameOrigin(r *http.Request) bool {
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		return err == nil && u.Host == r.Host
	}
	if sfs := r.Header.Get("Sec-Fetch-Site"); sfs != "" {
		return sfs == "same-origin"
	}
	if ref := r.Header.Get("Referer"); ref != "" {
		u, err := url.Parse(ref)
		return err == nil && u.Host == r.Host
	}
	return true
}

// csrfOK checks both halves: same origin, and the per-server token from
// the page (header or form field).
func (s *Server) csrfOK(r *http.Request) bool {
	if !sameOrigin(r) {
		return false
	}
	tok := r.Header.Get(csrfHeader)
	if tok == "" {
		tok = r.PostFormValue(csrfField)
	}
	return tok != "" && equal(tok, s.csrf)
}
