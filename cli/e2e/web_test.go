package e2e

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/harn-dev/harn/internal/testsupport"
)

// The node's web board in a real browser: a real `harn node` process,
// sessions seeded by hooks, Debian's chromium driven by chromedp.

// browser starts one headless Chromium for the test; ctx bounds it.
func browser(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(testsupport.Chromium(t)), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("disable-gpu", true), chromedp.WindowSize(1280, 900))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return bctx
}

func jsEval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

func navigate(t *testing.T, ctx context.Context, url string) int64 {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	res, err := chromedp.Run(c, chromedp.NavigateResponse(url))
	if err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	return res.Status
}

func waitJS(t *testing.T, ctx context.Context, d time.Duration, js string) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, d+3*time.Second)
	defer cancel()
	if err := chromedp.Do(c, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(d), chromedp.WithPollingMutation())); err != nil {
		t.Fatalf("waiting %v for %s: %v", d, js, err)
	}
}

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(c, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(testsupport.Artifacts(t), name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s (%d bytes)", p, len(png))
}

// TestNodeServesTheLiveBoard: a node started with --http-port serves the
// board: the sessions its hooks reported show, the one that needs input
// first; `harn agents lifecycle blocked` run in another process repaints
// the card within 2 s without a reload; the detail page of an ended
// session loads.
func TestNodeServesTheLiveBoard(t *testing.T) {
	testsupport.Chromium(t)
	e := newEnv(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePorts(t, 1)[0]))
	e.startNode("--http-port", addr)
	cwd := t.TempDir()
	const (
		working = "b0a4d-working"
		asking  = "b0a4d-asking"
		ended   = "b0a4d-ended"
	)
	for _, sid := range []string{working, asking, ended} {
		e.hook("claude-code", claudeStart(sid, cwd))
	}
	e.hook("claude-code", claudePrompt(working, cwd))
	e.hook("claude-code", claudePrompt(asking, cwd))
	e.hook("claude-code", claudePermission(asking, cwd))
	e.hook("claude-code", `{`+claudeCommon(ended, cwd)+`,"hook_event_name":"SessionEnd","reason":"prompt_input_exit"}`)

	url := strings.TrimSpace(e.ok("web", "url"))
	base := "http://" + addr + "/"
	if !strings.HasPrefix(url, base+"?token=") {
		t.Fatalf("harn web url printed %q, want %s?token=…", url, base)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := browser(t, ctx)

	if st := navigate(t, b, url); st != 200 {
		t.Fatalf("board: status %d", st)
	}
	waitJS(t, b, 10*time.Second, `document.querySelector('article[data-id="`+working+`"]') !== null`)
	ids := jsEval[[]string](t, b, `[...document.querySelectorAll('article.card')].map(a => a.dataset.id)`)
	if got := strings.Join(ids, " "); got != asking+" "+working {
		t.Fatalf("cards %q, want the one that needs input, then the working one (the ended one is not live)", got)
	}
	screenshot(t, b, "node-board.png")

	waitJS(t, b, 10*time.Second, `document.getElementById('live').dataset.state === 'live'`)
	jsEval[bool](t, b, `window.__sameDocument = true`)
	start := time.Now()
	e.ok("agents", "lifecycle", "blocked", "--session", working, "--reason", "waiting for the staging key")
	waitJS(t, b, 2*time.Second, `document.querySelector('article[data-id="`+working+`"]').classList.contains('lc-blocked')`)
	took := time.Since(start)
	if !jsEval[bool](t, b, `window.__sameDocument === true`) {
		t.Fatal("the page reloaded")
	}
	txt := jsEval[string](t, b, `document.querySelector('article[data-id="`+working+`"]').innerText`)
	if !strings.Contains(txt, "waiting for the staging key") {
		t.Fatalf("the blocked card does not show its reason: %q", txt)
	}
	t.Logf("the card repainted %v after the lifecycle command was started", took)
	screenshot(t, b, "node-board-blocked.png")

	if st := navigate(t, b, base+"s/"+ended); st != 200 {
		t.Fatalf("detail of the ended session: status %d", st)
	}
	h1 := jsEval[string](t, b, `document.querySelector('h1').innerText`)
	if !strings.Contains(h1, "ended") {
		t.Fatalf("detail h1 %q does not say ended", h1)
	}
	types := jsEval[[]string](t, b, `[...document.querySelectorAll('table.trace td.etype')].map(td => td.textContent)`)
	if len(types) < 2 || types[0] != "session.end" {
		t.Fatalf("trace of the ended session %v, want session.end first (newest first)", types)
	}
	screenshot(t, b, "node-detail-ended.png")
}

// TestBoardBeyondLoopbackNeedsItsToken: a board bound to 0.0.0.0 with
// --http-token answers 401 without the token (the board, the detail
// pages, the stream and /metrics) with only the page that says to run
// `harn web open`, and `harn web url` prints the URL that opens it in a
// browser.
func TestBoardBeyondLoopbackNeedsItsToken(t *testing.T) {
	e := newEnv(t)
	port := freePorts(t, 1)[0]
	const token = "e2e-board-token-0123456789"
	e.startNode("--http-port", "0.0.0.0:"+strconv.Itoa(port), "--http-token", token)
	waitDial(t, "127.0.0.1:"+strconv.Itoa(port)) // the socket answers before the board listens
	cwd := t.TempDir()
	e.hook("claude-code", claudeStart("t0ken-session", cwd))
	base := "http://127.0.0.1:" + strconv.Itoa(port) + "/"
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	fetch := func(url, auth string) (int, string) {
		req, _ := http.NewRequest("GET", url, nil)
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if strings.HasSuffix(url, "events") && res.StatusCode == 200 {
			return res.StatusCode, ""
		}
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}
	for _, p := range []string{"", "fragment", "s/t0ken-session", "events", "metrics"} {
		for _, tok := range []string{"", "wrong"} {
			if code, body := fetch(base+p, tok); code != 401 || !strings.Contains(body, "harn web open") || strings.Contains(body, "t0ken-session") {
				t.Errorf("/%s with token %q: %d, %q; want 401 and the page that says to run harn web open", p, tok, code, body)
			}
		}
	}
	if code, body := fetch(base+"fragment", token); code != 200 || !strings.Contains(body, "t0ken-session") {
		t.Errorf("/fragment with the token: %d", code)
	}
	if code, body := fetch(base+"metrics", token); code != 200 || !strings.Contains(body, "harn_events_ingested_total") {
		t.Errorf("/metrics with the token: %d", code)
	}
	url := strings.TrimSpace(e.ok("web", "url"))
	if url != base+"?token="+token {
		t.Fatalf("harn web url printed %q, want %s?token=%s", url, base, token)
	}

	testsupport.Chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := browser(t, ctx)
	var mu sync.Mutex
	var statuses []int64
	if err := chromedp.Listen(b, func(ev any) {
		if e, ok := ev.(*network.EventResponseReceived); ok && e.Type == network.ResourceTypeDocument {
			mu.Lock()
			statuses = append(statuses, e.Response.Status)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	c, cc := context.WithTimeout(b, 20*time.Second)
	err := chromedp.Do(c, chromedp.Navigate(base))
	cc()
	var le *chromedp.LoadError
	if err != nil && !(errors.As(err, &le) && strings.Contains(le.ErrorText, "ERR_HTTP_RESPONSE_CODE_FAILURE")) {
		t.Fatal(err)
	}
	mu.Lock()
	got := append([]int64(nil), statuses...)
	mu.Unlock()
	if len(got) != 1 || got[0] != 401 {
		t.Fatalf("the browser without the token: document statuses %v, want [401]", got)
	}
	if st := navigate(t, b, url); st != 200 {
		t.Fatalf("the browser with harn web url: status %d", st)
	}
	waitJS(t, b, 10*time.Second, `document.querySelector('article[data-id="t0ken-session"]') !== null`)
}

// TestWebURLWithoutABoardExitsUnavailable: `harn web url` with no node,
// and with a node that serves no board (--http-port 0), exits 5 with one
// line saying what to do.
func TestWebURLWithoutABoardExitsUnavailable(t *testing.T) {
	e := newEnv(t)
	r := e.harn("", "web", "url")
	if r.code != 5 || !strings.Contains(r.stderr, "harn node") {
		t.Fatalf("no node: %v", r)
	}
	oneLineErr(t, r)
	e.startNode("--http-port", "0")
	r = e.harn("", "web", "url")
	if r.code != 5 || !strings.Contains(r.stderr, "--http-port") {
		t.Fatalf("a node without a board: %v", r)
	}
	oneLineErr(t, r)
}

// waitDial waits, bounded, until addr accepts a TCP connection: a node's
// socket answers while the node still opens its other listeners.
func waitDial(t *testing.T, addr string) {
	t.Helper()
	eventually(t, stateTimeout, addr+" accepts connections", func() (bool, string) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false, err.Error()
		}
		c.Close()
		return true, ""
	})
}
