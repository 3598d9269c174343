package board

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// cookiePrefix starts the name of the cookie that holds the token's
// derived value once a browser presented ?token=. The rest of the name is
// derived from the token too, so that two boards on one host (on two
// ports: cookies do not tell ports apart) do not overwrite each other's.
const cookiePrefix = "harn_board_"

// csrfField is the form field (and csrfHeader the header) that carries the
// per-server CSRF token on every POST.
const (
	csrfField  = "csrf"
	csrfHeader = "X-Harn-Csrf"
)

// metricsPath is the one path a scrape-only token opens.
const metricsPath = "/metrics"

// unauthorizedPage is the whole body of every 401: no roster byte, only
// what to do.
const unauthorizedPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>token needed · harn</title></head>
<body><h1>This board needs its token</h1>
<p>Run <code>harn web open</code> on the machine of this node, as the user who runs it: it opens the board with its token.
Or run <code>harn web url</code> and open the URL it prints.</p></body></html>
`

func cookieValue(token string) string {
	sum := sha256.Sum256([]byte("harn-board-cookie\x00" + token))
	return hex.EncodeToString(sum[:])
}

func cookieNameOf(token string) string {
	sum := sha256.Sum256([]byte("harn-board-cookie-name\x00" + token))
	return cookiePrefix + hex.EncodeToString(sum[:6])
}

func equal(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// auth is how a request proved itself.
type auth int

const (
	authNone    auth = iota
	authBearer       // Authorization: Bearer <board token>
	authCookie       // the cookie set from ?token=
	authMetrics      // Authorization: Bearer <scrape-only token>
)

// guard wraps every route: it counts the handler for Close, bounds the
// body, sets the security headers, refuses a foreign Host on a loopback
// board (DNS rebinding), enforces the token, and refuses a state-changing
// request that a browser sent from another origin.
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

		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.Limits.MaxBody)
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-store")

		// A page of another site that rebinds its name to 127.0.0.1
		// holds no cookie of this board; a loopback board still answers
		// only to loopback names.
		if s.loopback && !loopbackHostHeader(r.Host) {
			http.Error(w, "board: this board answers only to localhost", http.StatusMisdirectedRequest)
			return
		}
		if r.URL.Path == ActPath {
			// A notification's button: its action token is its only
			// proof (act.go); the board's token is neither needed nor
			// taken here.
			s.act(w, r)
			return
		}
		a := s.authorized(r)
		if tok, ok := r.URL.Query()["token"]; ok && r.Method == http.MethodGet {
			// A valid ?token= sets the cookie. A browser's navigation is
			// then redirected to the same URL without it, so that the
			// token leaves the address bar and the history; any other
			// client (curl, a script: no address bar) gets the page at
			// once.
			valid := len(tok) == 1 && equal(tok[0], s.cfg.Token)
			if valid {
				http.SetCookie(w, &http.Cookie{Name: s.cookieName, Value: s.cookie, Path: "/",
					HttpOnly: true, SameSite: http.SameSiteStrictMode})
				a = authCookie
			}
			if a != authCookie && a != authBearer {
				s.unauthorized(w)
				return
			}
			v := r.URL.Query()
			v.Del("token")
			if r.Header.Get("Sec-Fetch-Mode") == "navigate" {
				// One leading slash: "//host" would leave this board.
				u := url.URL{Path: "/" + strings.TrimLeft(r.URL.Path, "/\\"), RawQuery: v.Encode()}
				http.Redirect(w, r, u.String(), http.StatusSeeOther)
				return
			}
			r.URL.RawQuery = v.Encode()
		}
		if a != authNone {
			ownerConn(r.Context()) // its slot no longer counts as pending
		}
		switch a {
		case authNone:
			s.unauthorized(w)
			return
		case authMetrics:
			if r.URL.Path != metricsPath || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
				h.Set("Connection", "close")
				refuse(w, r, http.StatusForbidden, "refused: the scrape token opens GET /metrics only")
				return
			}
		}
		// CSRF, first half: a state-changing request that rides on the
		// cookie must come from this board's own page. A bearer header is
		// never added by a browser on its own, so a request that carries
		// one is not a forgery and needs no Origin.
		if !safeMethod(r.Method) && a != authBearer && !sameOrigin(r) {
			refuse(w, r, http.StatusForbidden, "refused: the request did not come from this board's page (no matching Origin or Sec-Fetch-Site); reload the page and try again")
			return
		}
		if r.ContentLength == 0 {
			// Nothing more to read: the read timeout has done its part,
			// and a handler running past it must not see its request
			// cancelled by the connection's background read.
			_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
		}
		next.ServeHTTP(w, r)
	})
}

// refuse answers a refusal as the action's result: JSON for the page's
// script, text otherwise.
func refuse(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if wantsJSON(r) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(result{Message: msg})
		return
	}
	http.Error(w, "board: "+msg, status)
}

// unauthorized answers 401 with the short page that says how to get in,
// and closes the connection: a client without the token holds no idle
// connection open.
func (s *Server) unauthorized(w http.ResponseWriter) {
	h := w.Header()
	h.Set("WWW-Authenticate", `Bearer realm="harn board"`)
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Connection", "close")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = w.Write([]byte(unauthorizedPage))
}

// authorized tells how the request proved itself: the board's token as a
// bearer header or cookie, or the scrape-only token as a bearer header.
// Every comparison is constant-time.
func (s *Server) authorized(r *http.Request) auth {
	if hdr := r.Header.Get("Authorization"); hdr != "" {
		scheme, tok, ok := strings.Cut(hdr, " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			tok = strings.TrimSpace(tok)
			if equal(tok, s.cfg.Token) {
				return authBearer
			}
			if s.cfg.MetricsToken != "" && equal(tok, s.cfg.MetricsToken) {
				return authMetrics
			}
		}
		return authNone // a wrong header is not helped by a cookie
	}
	if c, err := r.Cookie(s.cookieName); err == nil && equal(c.Value, s.cookie) {
		return authCookie
	}
	return authNone
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

func loopbackHostHeader(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return isLoopbackHost(strings.ToLower(host))
}

// sameOrigin is the CSRF check's first half for a browser: the Origin
// header must name this host; when a browser sends none, Sec-Fetch-Site
// must say same-origin. A request with neither is refused: every browser
// that runs the board's page sends one of them on a POST.
func sameOrigin(r *http.Request) bool {
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Path == "" &&
			strings.EqualFold(u.Host, r.Host)
	}
	return r.Header.Get("Sec-Fetch-Site") == "same-origin"
}

// csrfOK is the CSRF check's second half: the per-server token from the
// page (header or form field).
func (s *Server) csrfOK(r *http.Request) bool {
	tok := r.Header.Get(csrfHeader)
	if tok == "" {
		tok = r.PostFormValue(csrfField)
	}
	return tok != "" && equal(tok, s.csrf)
}
