package node

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/board"
	"github.com/harn-dev/harn/node/roster"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/presence"
)

func TestParseHTTPAddr(t *testing.T) {
	for _, c := range []struct {
		in, addr string
		port     int
		bad      bool
	}{
		{"", "", 0, false}, {"0", "", 0, false}, {"off", "", 0, false},
		{"7713", "127.0.0.1:7713", 7713, false},
		{"127.0.0.1:7713", "127.0.0.1:7713", 7713, false},
		{"0.0.0.0:8080", "0.0.0.0:8080", 8080, false},
		{"[::1]:9000", "[::1]:9000", 9000, false},
		{"127.0.0.1:0", "127.0.0.1:0", 0, false},
		{"localhost:7713", "localhost:7713", 7713, false},
		{"70000", "", 0, true}, {"-1", "", 0, true}, {"abc", "", 0, true},
		{"1.2.3.4:x", "", 0, true}, {"::1", "", 0, true},
	} {
		addr, port, err := ParseHTTPAddr(c.in)
		if c.bad {
			if !errors.Is(err, ErrHTTPAddr) {
				t.Errorf("%q: err %v, want ErrHTTPAddr", c.in, err)
			}
			continue
		}
		if err != nil || addr != c.addr || port != c.port {
			t.Errorf("%q: %q %d %v, want %q %d", c.in, addr, port, err, c.addr, c.port)
		}
	}
}

func webNode(t *testing.T, addr, token string) *Node {
	t.Helper()
	cfg := testConfig(t, t.TempDir())
	cfg.ProjectDelay = 0
	cfg.HTTPAddr, cfg.HTTPToken = addr, token
	return openNode(t, cfg)
}

func get(t *testing.T, url string, hdr ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestHeartbeatWriteNotifiesTheBoard: a lifecycle-only change (no
// presence hash of interest to gossip) reaches a board subscription
// through the heartbeat write.
func TestHeartbeatWriteNotifiesTheBoard(t *testing.T) {
	n := webNode(t, "127.0.0.1:0", "")
	mustIngest(t, n, ev("s1", "1", presence.TypeSessionStart, 1, nil))
	ch, stop := n.changes.Subscribe()
	defer stop()
	mustIngest(t, n, ev("s1", "2", presence.TypeTaskState, 2, map[string]any{presence.AttrTaskState: "blocked", presence.AttrReason: "R"}))
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("no change after a heartbeat write")
	}
}

// TestBoardServesTheRosterInAgentsListOrder: the node's board lists its
// sessions, the one that needs input first, and the detail page of an
// ended session loads.
func TestBoardServesTheRosterInAgentsListOrder(t *testing.T) {
	n := webNode(t, "127.0.0.1:0", "")
	mustIngest(t, n,
		ev("idle-1", "1", presence.TypeSessionStart, 1, nil),
		ev("ask-1", "2", presence.TypeSessionStart, 1, nil),
		ev("ask-1", "3", presence.TypeInputRequested, 2, map[string]any{"tool": "Bash"}),
		ev("gone-1", "4", presence.TypeSessionStart, 1, nil),
		ev("gone-1", "5", presence.TypeSessionEnd, 3, nil))
	full := n.BoardURL()
	u := n.web.BaseURL()
	if !strings.HasPrefix(u, "http://127.0.0.1:") || !strings.HasPrefix(full, u+"?token=") {
		t.Fatalf("board url %q, base %q", full, u)
	}
	b, err := os.ReadFile(WebURLPath(n.cfg.DataDir))
	if err != nil || strings.TrimSpace(string(b)) != full {
		t.Fatalf("url file %q %v, want %q", b, err, full)
	}
	code, body := get(t, u+"fragment", bearer(n)...)
	if code != 200 {
		t.Fatalf("fragment: %d %s", code, body)
	}
	ia, ii := strings.Index(body, "ask-1"), strings.Index(body, "idle-1")
	if ia < 0 || ii < 0 || ia > ii {
		t.Errorf("the board does not list ask-1 before idle-1 (%d, %d)", ia, ii)
	}
	if strings.Contains(body, "gone-1") {
		t.Error("an ended session is on the live board")
	}
	if code, body := get(t, u+"s/gone-1", bearer(n)...); code != 200 || !strings.Contains(body, "gone-1") {
		t.Errorf("detail of an ended session: %d", code)
	}
	if code, _ := get(t, u+"s/nosuch", bearer(n)...); code != 404 {
		t.Errorf("detail of an unknown session: %d, want 404", code)
	}
}

func TestBoardPortTakenIsAListenErrorNamingHTTPPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cfg := testConfig(t, t.TempDir())
	cfg.HTTPAddr = l.Addr().String()
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = n.Open()
	var le *ListenError
	if !errors.As(err, &le) || le.Flag != "--http-port" || le.Listener != "http" || !strings.Contains(err.Error(), l.Addr().String()) {
		t.Fatalf("open with the http port taken: %v", err)
	}
}

// bearer is the board token's header, for get.
func bearer(n *Node) []string {
	u, _ := url.Parse(n.BoardURL())
	return []string{"Authorization", "Bearer " + u.Query().Get("token")}
}

// TestBoardNeedsTheGeneratedToken: a board without --http-token, on
// loopback as beyond, makes a token, keeps it 0600 in the data dir (the
// same one across restarts), answers 401 without it (to /metrics too),
// and serves with it.
func TestBoardNeedsTheGeneratedToken(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "0.0.0.0:0"} {
		n := webNode(t, addr, "")
		fi, err := os.Stat(WebTokenPath(n.cfg.DataDir))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: token file: %v %v", addr, fi, err)
		}
		tok, _ := os.ReadFile(WebTokenPath(n.cfg.DataDir))
		if len(strings.TrimSpace(string(tok))) < MinWebToken {
			t.Fatalf("%s: generated token %q", addr, tok)
		}
		u := n.BoardURL()
		if !strings.Contains(u, "token="+strings.TrimSpace(string(tok))) {
			t.Fatalf("%s: url %q does not carry the token", addr, u)
		}
		base := n.web.BaseURL()
		for _, p := range []string{"", "fragment", "metrics", "events"} {
			if code, body := get(t, base+p); code != 401 || !strings.Contains(body, "harn web open") {
				t.Errorf("%s /%s without the token: %d %q", addr, p, code, body)
			}
		}
		if code, _ := get(t, base+"metrics", "Authorization", "Bearer "+strings.TrimSpace(string(tok))); code != 200 {
			t.Errorf("%s /metrics with the token: %d", addr, code)
		}
	}
}

// TestShortBoardTokensAreRefused: a configured board or scrape token
// shorter than MinWebToken refuses the start (ErrConfig).
func TestShortBoardTokensAreRefused(t *testing.T) {
	for _, mod := range []func(*Config){
		func(c *Config) { c.HTTPToken = "short" },
		func(c *Config) { c.Web.MetricsToken = "short" },
	} {
		cfg := testConfig(t, t.TempDir())
		cfg.HTTPAddr, cfg.HTTPToken = "127.0.0.1:0", "0123456789abcdef-long-enough"
		mod(&cfg)
		n, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Open(); !errors.Is(err, ErrWebTokenShort) || !errors.Is(err, ErrConfig) {
			n.Close()
			t.Fatalf("open with a short token: %v", err)
		}
	}
}

// TestScrapeTokenOpensOnlyMetrics: the node's scrape-only token opens
// /metrics and not the board.
func TestScrapeTokenOpensOnlyMetrics(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.ProjectDelay = 0
	cfg.HTTPAddr, cfg.Web.MetricsToken = "127.0.0.1:0", "scrape-0123456789abcdef"
	n := openNode(t, cfg)
	base := n.web.BaseURL()
	if code, body := get(t, base+"metrics", "Authorization", "Bearer "+cfg.Web.MetricsToken); code != 200 || !strings.Contains(body, "harn_") {
		t.Errorf("/metrics with the scrape token: %d", code)
	}
	if code, _ := get(t, base+"fragment", "Authorization", "Bearer "+cfg.Web.MetricsToken); code != 403 {
		t.Errorf("/fragment with the scrape token: %d, want 403", code)
	}
}

// A token file others could read is never used as it is: the node tightens
// its data dir, the token file included, to 0600 before the board reads it.
func TestTokenFileIsTightenedBeforeUse(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.HTTPToken = ""
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := WebTokenPath(cfg.DataDir)
	if err := os.WriteFile(path, []byte("0123456789abcdef0123\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Open(); err != nil {
		t.Fatalf("open with a 0644 token file in the data dir: %v", err)
	}
	defer n.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file is %v after open, want 0600", fi.Mode().Perm())
	}
}

// TestMetricsCoverIngestSpoolAndSessions: /metrics on the board's
// listener parses with the text parser and counts what was ingested.
func TestMetricsCoverIngestSpoolAndSessions(t *testing.T) {
	n := webNode(t, "127.0.0.1:0", "")
	mustIngest(t, n, ev("m1", "1", presence.TypeSessionStart, 1, nil), ev("m1", "2", presence.TypeUserPromptSubmit, 2, nil))
	code, body := get(t, n.web.BaseURL()+"metrics", bearer(n)...)
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	find := func(name string, want map[string]string) (float64, bool) {
		for _, m := range fams[name].GetMetric() {
			ok := true
			for _, l := range m.GetLabel() {
				if v, in := want[l.GetName()]; in && v != l.GetValue() {
					ok = false
				}
			}
			if !ok {
				continue
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue(), true
			case m.Gauge != nil:
				return m.Gauge.GetValue(), true
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount()), true
			}
		}
		return 0, false
	}
	if v, _ := find("harn_events_ingested_total", map[string]string{"agent": "claude-code", "type": presence.TypeSessionStart}); v != 1 {
		t.Errorf("session.start counted %v times, want 1", v)
	}
	if v, _ := find("harn_ingest_duration_seconds", nil); v < 1 {
		t.Errorf("ingest latency has %v samples", v)
	}
	if _, ok := find("harn_spool_depth", nil); !ok {
		t.Error("no spool depth")
	}
	if v, _ := find("harn_sessions", map[string]string{"activity": "working", "lifecycle": "active"}); v != 1 {
		t.Errorf("working sessions %v, want 1", v)
	}
	if fams["harn_raft_state"] != nil {
		t.Error("raft state reported without the mesh")
	}
	_ = dto.MetricType_GAUGE
}

func TestBoardErrNotFoundWrapsUnknownSession(t *testing.T) {
	n := webNode(t, "", "")
	if _, err := n.web.Source().Session(t.Context(), "nosuch"); !errors.Is(err, board.ErrNotFound) || !errors.Is(err, ErrUnknownSession) {
		t.Fatalf("%v", err)
	}
}

// TestBoardRowsCarryOpenRequestsAndApproveAnswersThem: an open
// permission request shows on its session's row with Approve and Deny,
// and the board's Approve answers it through the same path as
// `harn agents approve`.
func TestBoardRowsCarryOpenRequestsAndApproveAnswersThem(t *testing.T) {
	n := webNode(t, "", "")
	mustIngest(t, n, ev("p1", "1", presence.TypeSessionStart, 1, nil))
	ch, stop := n.changes.Subscribe()
	defer stop()
	type answer struct {
		allow bool
		ok    bool
	}
	done := make(chan answer, 1)
	go func() {
		_, ans, ok, _ := n.Tasks().Approvals().Await(t.Context(),
			tasks.Request{Session: "p1", Agent: "claude-code", Tool: "Bash", Summary: "Bash: make"}, time.Minute)
		done <- answer{ans.Allow, ok}
	}()
	select {
	case <-ch: // the request opening is a change
	case <-time.After(5 * time.Second):
		t.Fatal("no change when a permission request opened")
	}
	var row board.Row
	for i := 0; i < 200; i++ {
		rows, err := n.web.Source().Roster(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) == 1 && len(rows[0].PendingRequests) == 1 {
			row = rows[0]
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(row.PendingRequests) != 1 {
		t.Fatal("the open request is not on its row")
	}
	req := row.PendingRequests[0]
	if req.Kind != "permission" || !strings.Contains(req.Summary, "Bash") {
		t.Fatalf("request %+v", req)
	}
	msg, err := n.web.Actions().Approve(t.Context(), board.ActionRequest{SessionID: "p1", RequestID: req.ID, Kind: req.Kind, By: "board"})
	if err != nil || !strings.Contains(msg, "approved") {
		t.Fatalf("approve: %q %v", msg, err)
	}
	select {
	case a := <-done:
		if !a.ok || !a.allow {
			t.Fatalf("the hook got %+v, want an approval", a)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting hook got no answer")
	}
	if _, err := n.web.Actions().Deny(t.Context(), board.ActionRequest{SessionID: "p1", RequestID: req.ID, Kind: req.Kind}); err == nil ||
		!strings.Contains(err.Error(), "already answered") {
		t.Fatalf("a second answer: %v, want a refusal naming the first", err)
	}
}

// TestRowOfHarnTaskGetsTaskButtonsAndConfirmations: a session with a harn
// task gets Steer, Follow-up and Cancel, and each pending call an
// Approve/Deny as a confirmation of that task.
func TestRowOfHarnTaskGetsTaskButtonsAndConfirmations(t *testing.T) {
	st := presence.NewState("s")
	st.Events = 1
	row := api.RowOf(&st)
	row.Reachable, row.Source = true, "local"
	row.HarnTask = &api.HarnTask{Id: "t-1", State: "running", Text: "fix it", PendingCalls: []string{"c1"}}
	e := roster.Entry{SessionRow: row}
	r := board.RowOf(e.Row())
	if !r.HasTask() || r.TaskText() != "fix it" {
		t.Fatalf("row %+v", r)
	}
	if len(r.PendingRequests) != 1 || r.PendingRequests[0] != (board.Request{ID: "c1", Kind: "confirmation", TaskID: "t-1"}) {
		t.Fatalf("requests %+v", r.PendingRequests)
	}
}

// FuzzParseHTTPAddr: any --http-port value either fails with ErrHTTPAddr
// or gives an address that net.SplitHostPort reads, with the port it
// reports.
func FuzzParseHTTPAddr(f *testing.F) {
	for _, s := range []string{"", "0", "off", "7713", "127.0.0.1:7713", "[::1]:0", ":80", "a:b:c", "99999", " 7713 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		addr, port, err := ParseHTTPAddr(s)
		if err != nil {
			if !errors.Is(err, ErrHTTPAddr) {
				t.Fatalf("%q: %v does not wrap ErrHTTPAddr", s, err)
			}
			return
		}
		if addr == "" {
			if port != 0 {
				t.Fatalf("%q: no board but port %d", s, port)
			}
			return
		}
		_, p, serr := net.SplitHostPort(addr)
		if serr != nil || p != strconv.Itoa(port) || port < 0 || port > 65535 {
			t.Fatalf("%q: addr %q port %d (%v)", s, addr, port, serr)
		}
	})
}
