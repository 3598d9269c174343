package board

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/clock"
)

const localHost = "127.0.0.1:7713"

// do serves one request from a browser that holds the board's cookie
// (the board's token is secret), unless hdr names a Cookie or an
// Authorization header; a header given as "" is not sent.
func do(t *testing.T, h http.Handler, method, target string, body io.Reader, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, body)
	req.Host = localHost
	_, c := hdr["Cookie"]
	_, a := hdr["Authorization"]
	if !c && !a {
		req.AddCookie(&http.Cookie{Name: cookieNameOf(secret), Value: cookieValue(secret)})
	}
	for k, v := range hdr {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func get(t *testing.T, h http.Handler, target string) *httptest.ResponseRecorder {
	return do(t, h, http.MethodGet, target, nil, nil)
}

var cardID = regexp.MustCompile(`<article class="card[^"]*" data-id="([^"]+)"`)

// cardsIn lists the card ids of a page in order.
func cardsIn(body string) []string {
	var out []string
	for _, m := range cardID.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestBoardShowsLiveSessionsOnly(t *testing.T) {
	s, _, _ := newTestServer(t, nil)
	w := get(t, s.Handler(), "/")
	if w.Code != 200 {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	got := cardsIn(w.Body.String())
	if len(got) != 6 {
		t.Fatalf("want 6 live cards, got %v", got)
	}
	for _, id := range got {
		if id == "s-ended" {
			t.Fatal("an ended session is on the live board")
		}
	}
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("content type %q", ct)
	}
	if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Fatalf("no CSP: %q", csp)
	}
}

func TestNeedsInputAndBlockedSortFirst(t *testing.T) {
	s, _, _ := newTestServer(t, nil)
	got := cardsIn(get(t, s.Handler(), "/").Body.String())
	// Groups come in the order of their most urgent card, reachable
	// machines first: beta (needs input, blocked, working), alpha
	// (working, idle), then gamma (unreachable).
	want := []string{"s-need", "s-block", "s-task", "s-work", "s-idle", "s-gone"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("order\n got %v\nwant %v", got, want)
	}
}

func TestConfigLessDecidesTheOrder(t *testing.T) {
	byName := func(a, b Row) bool { return a.Name < b.Name }
	s, _, _ := newTestServer(t, func(c *Config) { c.Less = byName })
	got := cardsIn(get(t, s.Handler(), "/fragment?node=alpha").Body.String())
	if strings.Join(got, " ") != "s-idle s-work" {
		t.Fatalf("injected order not used: %v", got)
	}
}

func TestCardShowsChipsAgeAndSilentMarker(t *testing.T) {
	s, _, _ := newTestServer(t, nil)
	body := get(t, s.Handler(), "/").Body.String()
	for _, want := range []string{
		`working · silent 7m`,
		`class="chip lc lc-blocked">blocked: waiting for repository access</span>`,
		`class="chip lc lc-done">done</span>`,
		`class="chip act act-needs_input">needs input</span>`,
		`<span class="dot" aria-hidden="true"></span>working`,
		`datetime="2026-08-12T10:23:00Z">7m</time>`, // last evidence of s-work
		`unreachable for <time data-age datetime="2026-08-12T10:18:00Z">12m</time>`,
		`class="machine unreachable" aria-label="machine gamma"`,
		`<span class="agent">cursor</span>`,
		`harn · docs`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("board lacks %q", want)
		}
	}
}

func TestAgentTextIsEscapedAndSanitized(t *testing.T) {
	evil := Row{SessionRow: &api.SessionRow{SessionId: "s-evil", Name: "<script>alert(1)</script>", Agent: "codex", Node: "alpha",
		Task: "\x1b]0;pwned\x07 rm -rf \u202e<b>", Activity: "working", TaskState: "blocked",
		BlockerReason: "\"><img src=x onerror=alert(1)>", Reachable: true}}
	s, err := New(Config{Token: secret, Source: newFake(evil), Clock: clock.NewFake(t0)})
	if err != nil {
		t.Fatal(err)
	}
	body := get(t, s.Handler(), "/").Body.String()
	for _, bad := range []string{"<script>alert", "<img", "\x1b", "\x07", "\u202e", "<b>"} {
		if strings.Contains(body, bad) {
			t.Errorf("page carries %q unescaped", bad)
		}
	}
	if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the name is not shown escaped")
	}
	d := get(t, s.Handler(), "/s/s-evil").Body.String()
	if strings.Contains(d, "<img") || strings.Contains(d, "\x1b") {
		t.Error("detail page carries agent markup or control bytes")
	}
}

func TestFiltersSelectMachineAgentActivityLifecycle(t *testing.T) {
	s, _, _ := newTestServer(t, nil)
	cases := []struct {
		query string
		want  string
	}{
		{"node=alpha", "s-work s-idle"},
		{"agent=codex", "s-need s-idle"},
		{"activity=working", "s-work s-task s-gone"},
		{"activity=needs_input", "s-need"},
		{"lifecycle=blocked", "s-block"},
		{"lifecycle=done", "s-idle"},
		{"node=beta&activity=working", "s-task"},
		{"node=nowhere", ""},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			for _, path := range []string{"/?", "/fragment?"} {
				got := strings.Join(cardsIn(get(t, s.Handler(), path+c.query).Body.String()), " ")
				if got != c.want {
					t.Errorf("%s%s: got %q want %q", path, c.query, got, c.want)
				}
			}
		})
	}
	// The form keeps the selection, and works without the script.
	body := get(t, s.Handler(), "/?node=alpha&lifecycle=done").Body.String()
	if !strings.Contains(body, `<option value="alpha" selected>`) || !strings.Contains(body, `<option value="done" selected>`) {
		t.Error("the filter form does not show the selection")
	}
	if !strings.Contains(body, `data-live="/fragment?lifecycle=done&amp;node=alpha"`) {
		t.Error("the live fragment URL does not carry the filter")
	}
}

func TestBoardFragmentIsThePartThatRepaints(t *testing.T) {
	s, _, _ := newTestServer(t, nil)
	w := get(t, s.Handler(), "/fragment")
	body := w.Body.String()
	if w.Code != 200 || strings.Contains(body, "<html") || len(cardsIn(body)) != 6 {
		t.Fatalf("fragment: %d, html=%v, cards=%v", w.Code, strings.Contains(body, "<html"), cardsIn(body))
	}
}

func TestRosterErrorShowsBannerNotCrash(t *testing.T) {
	s, src, _ := newTestServer(t, nil)
	src.err = errors.New("no leader\x1b[2J")
	w := get(t, s.Handler(), "/")
	if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "roster unavailable: no leader") {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	if strings.Contains(w.Body.String(), "\x1b") {
		t.Fatal("control bytes of an error reached the page")
	}
}

func TestDetailPageOfEndedSession(t *testing.T) {
	s, _, _ := newTestServer(t, nil)
	w := get(t, s.Handler(), "/s/s-ended")
	if w.Code != 200 {
		t.Fatalf("status %d", w.Code)
	}
	body := w.Body.String()
	for _, want := range []string{
		`<span class="chip ended">ended</span>`,
		`[DONE] - Agent eve - fix the flaky test`,
		`<code>presence/fold.go</code>`,
		`session.end`,
		`2026-08-12T09:00:00.000Z`,
		`(session.end)`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("detail lacks %q", want)
		}
	}
	// The trace is newest first.
	iEnd, iStart := strings.Index(body, `<td class="etype">session.end`), strings.Index(body, `<td class="etype">session.start`)
	if iEnd < 0 || iStart < 0 || iEnd > iStart {
		t.Errorf("trace is not newest first (end at %d, start at %d)", iEnd, iStart)
	}
	// Its live fragment too, and prefixes resolve.
	if w := get(t, s.Handler(), "/s/s-end/fragment"); w.Code != 200 || strings.Contains(w.Body.String(), "<html") {
		t.Errorf("detail fragment by prefix: %d", w.Code)
	}
}

func TestDetailShowsBothAxesWithSources(t *testing.T) {
	s, _, _ := newTestServer(t, nil)
	body := get(t, s.Handler(), "/s/s-need").Body.String()
	for _, want := range []string{"interaction.input_requested", "<h2>Activity</h2>", "<h2>Lifecycle</h2>",
		`value="approve"`, "rm -rf build &amp;&amp; make release VERSION=&lt;1.2&gt;", "/src/harn", "harn@main", "waiting 2m"} {
		if !strings.Contains(body, want) {
			t.Errorf("detail lacks %q", want)
		}
	}
}

func TestUnknownSessionIs404(t *testing.T) {
	s, _, _ := newTestServer(t, nil)
	w := get(t, s.Handler(), "/s/nope")
	if w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), "no session nope") {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
}

func TestStaticAssetsAreEmbedded(t *testing.T) {
	s, _, _ := newTestServer(t, nil)
	for _, p := range []string{"/static/board.css", "/static/board.js"} {
		if w := get(t, s.Handler(), p); w.Code != 200 || w.Body.Len() < 500 {
			t.Errorf("%s: %d, %d bytes", p, w.Code, w.Body.Len())
		}
	}
}

func TestActionButtonsRenderFromRowData(t *testing.T) {
	s, _, _ := newTestServer(t, nil)
	body := get(t, s.Handler(), "/").Body.String()
	for _, want := range []string{`name="request" value="req-1"`, `value="approve"`, `value="deny"`,
		`name="task" value="t-42"`, `value="steer"`, `value="follow_up"`, `value="cancel"`} {
		if !strings.Contains(body, want) {
			t.Errorf("board lacks %q", want)
		}
	}
	// Without Actions the board shows no buttons.
	s2, err := New(Config{Token: secret, Source: newFake(seed()...), Clock: clock.NewFake(t0)})
	if err != nil {
		t.Fatal(err)
	}
	if b := get(t, s2.Handler(), "/").Body.String(); strings.Contains(b, `value="approve"`) {
		t.Error("buttons without Actions")
	}
}

func form(s *Server, kv ...string) string {
	v := url.Values{"csrf": {s.csrf}}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v.Encode()
}

// post is a POST /action from the board's page: same Origin, unless hdr
// names an Origin or Sec-Fetch-Site.
func post(t *testing.T, s *Server, body string, hdr map[string]string) *httptest.ResponseRecorder {
	h := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	_, o := hdr["Origin"]
	_, f := hdr["Sec-Fetch-Site"]
	if !o && !f {
		h["Origin"] = "http://" + localHost
	}
	for k, v := range hdr {
		h[k] = v
	}
	return do(t, s.Handler(), http.MethodPost, "/action", strings.NewReader(body), h)
}

func TestActionCallsTheNodeAndShowsItsResult(t *testing.T) {
	s, _, acts := newTestServer(t, nil)
	js := map[string]string{"Accept": "application/json", "Origin": "http://" + localHost}
	cases := []struct{ form, call string }{
		{form(s, "kind", "approve", "session", "s-need", "request", "req-1"), "approve s-need  req-1 "},
		{form(s, "kind", "deny", "session", "s-need", "request", "req-1", "text", "not now"), "deny s-need  req-1 not now"},
		{form(s, "kind", "steer", "session", "s-task", "task", "t-42", "text", "use pebble"), "steer s-task t-42  use pebble"},
		{form(s, "kind", "follow_up", "session", "s-task", "text", "then the docs"), "follow_up s-task   then the docs"},
		{form(s, "kind", "cancel", "session", "s-task", "task", "t-42"), "cancel s-task t-42  "},
	}
	for i, c := range cases {
		w := post(t, s, c.form, js)
		if w.Code != 200 || !strings.Contains(w.Body.String(), `"ok":true`) {
			t.Fatalf("case %d: %d %s", i, w.Code, w.Body)
		}
		if got := acts.log(); got[len(got)-1] != c.call {
			t.Fatalf("case %d: called %q want %q", i, got[len(got)-1], c.call)
		}
	}
	acts.err = errors.New("refused: not the owner")
	w := post(t, s, form(s, "kind", "approve", "session", "s-need", "request", "req-1"), js)
	if w.Code != http.StatusBadGateway || !strings.Contains(w.Body.String(), "Approve failed: refused: not the owner") {
		t.Fatalf("error not shown: %d %s", w.Code, w.Body)
	}
}

func TestActionWithoutScriptAsksForConfirmationFirst(t *testing.T) {
	s, _, acts := newTestServer(t, nil)
	w := post(t, s, form(s, "kind", "cancel", "session", "s-task", "task", "t-42"), map[string]string{"Origin": "http://" + localHost})
	if w.Code != 200 || !strings.Contains(w.Body.String(), `name="confirmed" value="1"`) {
		t.Fatalf("no confirmation page: %d %s", w.Code, w.Body)
	}
	if n := len(acts.log()); n != 0 {
		t.Fatalf("the action ran before confirmation (%d calls)", n)
	}
	w = post(t, s, form(s, "kind", "cancel", "session", "s-task", "task", "t-42", "confirmed", "1"), map[string]string{"Origin": "http://" + localHost})
	if w.Code != 200 || !strings.Contains(w.Body.String(), "cancel sent to s-task") || len(acts.log()) != 1 {
		t.Fatalf("confirmed: %d %s", w.Code, w.Body)
	}
}

func TestActionRefusesBadInput(t *testing.T) {
	s, _, acts := newTestServer(t, nil)
	js := map[string]string{"Accept": "application/json"}
	for _, f := range []string{
		form(s, "kind", "explode", "session", "s-need"),
		form(s, "kind", "approve", "session", "s-need"),
		form(s, "kind", "steer", "session", "s-task", "task", "t-42"),
		form(s, "kind", "cancel", "session", "s-task"),
		form(s, "kind", "approve", "request", "req-1"),
	} {
		if w := post(t, s, f, js); w.Code != http.StatusBadRequest {
			t.Errorf("%s: %d", f, w.Code)
		}
	}
	if len(acts.log()) != 0 {
		t.Fatal("a bad action reached the node")
	}
}

// TestPostWithoutMatchingOriginIsRefused: a POST that rides on the cookie
// needs an Origin naming this host, or, without Origin, Sec-Fetch-Site:
// same-origin; and the page's CSRF token on top. A refused POST never
// reaches the node.
func TestPostWithoutMatchingOriginIsRefused(t *testing.T) {
	s, _, acts := newTestServer(t, nil)
	ok := form(s, "kind", "approve", "session", "s-need", "request", "req-1", "confirmed", "1")
	own := "http://" + localHost
	cases := []struct {
		name string
		body string
		hdr  map[string]string
		code int
	}{
		{"no origin and no fetch metadata", ok, map[string]string{"Origin": ""}, 403},
		{"a same-host referer alone", ok, map[string]string{"Origin": "", "Referer": own + "/"}, 403},
		{"foreign origin", ok, map[string]string{"Origin": "http://evil.example"}, 403},
		{"foreign port", ok, map[string]string{"Origin": "http://127.0.0.1:9"}, 403},
		{"null origin", ok, map[string]string{"Origin": "null"}, 403},
		{"foreign origin with same-origin fetch metadata", ok, map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "same-origin"}, 403},
		{"cross-site fetch", ok, map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"same-site fetch", ok, map[string]string{"Sec-Fetch-Site": "same-site"}, 403},
		{"no CSRF token", "kind=approve&session=s-need&request=req-1&confirmed=1", map[string]string{"Origin": own}, 403},
		{"wrong CSRF token", strings.Replace(ok, s.csrf, strings.Repeat("0", 64), 1), map[string]string{"Origin": own}, 403},
		{"same origin", ok, map[string]string{"Origin": own}, 200},
		{"same-origin fetch metadata and the header token", "kind=approve&session=s-need&request=req-1&confirmed=1", map[string]string{"Sec-Fetch-Site": "same-origin", csrfHeader: s.csrf}, 200},
	}
	for _, c := range cases {
		calls := len(acts.log())
		w := post(t, s, c.body, c.hdr)
		if w.Code != c.code {
			t.Errorf("%s: %d want %d", c.name, w.Code, c.code)
		}
		if ran := len(acts.log()) > calls; ran != (c.code == 200) {
			t.Errorf("%s: action ran=%v", c.name, ran)
		}
	}
}

// TestBearerPostNeedsNoOrigin: a POST authenticated by the bearer header
// (a script, not a browser: no browser adds that header by itself) needs
// no Origin, but still the CSRF token; a bearer-less one without Origin is
// refused.
func TestBearerPostNeedsNoOrigin(t *testing.T) {
	s, _, acts := newTestServer(t, nil)
	ok := form(s, "kind", "approve", "session", "s-need", "request", "req-1", "confirmed", "1")
	bearer := map[string]string{"Origin": "", "Authorization": "Bearer " + secret, "Accept": "application/json"}
	if w := post(t, s, ok, bearer); w.Code != 200 || len(acts.log()) != 1 {
		t.Fatalf("bearer POST without Origin: %d, calls %v", w.Code, acts.log())
	}
	if w := post(t, s, "kind=approve&session=s-need&request=req-1&confirmed=1", bearer); w.Code != 403 || len(acts.log()) != 1 {
		t.Fatalf("bearer POST without the CSRF token: %d, calls %v", w.Code, acts.log())
	}
	if w := post(t, s, ok, map[string]string{"Origin": "", "Accept": "application/json"}); w.Code != 403 || len(acts.log()) != 1 {
		t.Fatalf("cookie POST without Origin: %d, calls %v", w.Code, acts.log())
	}
}

func TestGetCannotAct(t *testing.T) {
	s, _, acts := newTestServer(t, nil)
	w := get(t, s.Handler(), "/action?"+form(s, "kind", "approve", "session", "s-need", "request", "req-1", "confirmed", "1"))
	if w.Code != http.StatusMethodNotAllowed || len(acts.log()) != 0 {
		t.Fatalf("GET /action: %d, calls %v", w.Code, acts.log())
	}
}

func TestAgesUseTheInjectedClock(t *testing.T) {
	clk := clock.NewFake(t0)
	s, _, _ := newTestServer(t, func(c *Config) { c.Clock = clk })
	if !strings.Contains(get(t, s.Handler(), "/").Body.String(), `>7m</time>`) {
		t.Fatal("age at t0")
	}
	clk.Set(t0.Add(2 * time.Hour))
	if !strings.Contains(get(t, s.Handler(), "/").Body.String(), `>2h</time>`) {
		t.Fatal("age after the clock moved")
	}
}

func TestRosterSliceOfTheSourceIsNotModified(t *testing.T) {
	shared := []Row{{SessionRow: &api.SessionRow{SessionId: "s\x1b", Name: "n\x07", Activity: "idle", Reachable: true}}}
	s, err := New(Config{Token: secret, Source: newFake(shared...), Clock: clock.NewFake(t0)})
	if err != nil {
		t.Fatal(err)
	}
	src := s.cfg.Source.(*fakeSource)
	get(t, s.Handler(), "/")
	if src.rows[0].Name != "n\x07" {
		t.Fatal("the board wrote into the source's rows")
	}
}

// FuzzActionForm posts any form: the board never panics, and never acts
// without the page's CSRF token.
func FuzzActionForm(f *testing.F) {
	f.Add("kind=approve&session=s-need&request=req-1&confirmed=1", true)
	f.Add("kind=steer&session=s&task=t&text=%1b%5b2J", true)
	f.Add("kind=%ff&session=&&&=", false)
	f.Fuzz(func(t *testing.T, body string, withToken bool) {
		src := newFake(seed()...)
		acts := &fakeActions{}
		s, err := New(Config{Token: secret, Source: src, Actions: acts, Clock: clock.NewFake(t0)})
		if err != nil {
			t.Fatal(err)
		}
		if withToken {
			body += "&csrf=" + s.csrf
		}
		w := post(t, s, body, map[string]string{"Accept": "application/json"})
		if w.Code == 0 {
			t.Fatal("no status")
		}
		if !withToken && !strings.Contains(body, s.csrf) && len(acts.log()) != 0 {
			t.Fatal("acted without the CSRF token")
		}
		for _, c := range strings.Join(acts.log(), "") {
			if c < 0x20 && c != ' ' {
				t.Fatalf("a control character reached the node: %q", acts.log())
			}
		}
	})
}

// TestDetailPageShowsHumanTimesAndAttributes: the detail page prints times to
// the second in UTC (the exact RFC 3339 form stays in the markup for
// scripts and tooltips), shows an event's attributes as a key/value table,
// and has no "Name projection" panel.
func TestDetailPageShowsHumanTimesAndAttributes(t *testing.T) {
	s, src, _ := newTestServer(t, nil)
	src.traces["s-ended"] = append(seedTrace(), presence.Event{ID: "e4", SessionID: "s-ended", Type: "tool.pre",
		TS: t0.Add(-80 * time.Minute), Seq: 4, Attrs: map[string]any{"tool": "Bash", "command": "<b>go test</b>", "n": 3}})
	w := get(t, s.Handler(), "/s/s-ended")
	if w.Code != 200 {
		t.Fatalf("status %d", w.Code)
	}
	body := w.Body.String()
	for _, want := range []string{
		`>2026-08-12 07:30:00 UTC</time>`,
		`<tr><th scope="row">command</th><td>&lt;b&gt;go test&lt;/b&gt;</td></tr>`,
		`<tr><th scope="row">n</th><td>3</td></tr>`,
		`<tr><th scope="row">tool</th><td>Bash</td></tr>`,
		`agent's title`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("detail lacks %q", want)
		}
	}
	for _, bad := range []string{"Name projection", `"task_state":`, `>2026-08-12T`} {
		if strings.Contains(body, bad) {
			t.Errorf("detail still shows %q", bad)
		}
	}
}

// TestTraceAttributesAreBounded: one event with many attributes shows at
// most maxAttrs of them and says how many more there are.
func TestTraceAttributesAreBounded(t *testing.T) {
	m := map[string]any{}
	for i := 0; i < maxAttrs+5; i++ {
		m[fmt.Sprintf("k%02d", i)] = strings.Repeat("x", 2*maxAttrValue)
	}
	got, more := attrsOf(m)
	if len(got) != maxAttrs || more != 5 {
		t.Fatalf("%d shown, %d more; want %d and 5", len(got), more, maxAttrs)
	}
	if len(got[0].Value) > maxAttrValue+4 {
		t.Fatalf("value not clipped: %d bytes", len(got[0].Value))
	}
}
