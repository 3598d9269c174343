package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Who may use a node's board: only the holder of its token, on loopback
// too; a browser's POST only from the board's own page; and no client
// holds more of it than its bounds.

// board is a running node's board as `harn web url` tells it.
type board struct {
	url, base, token string
}

func (e *env) board() board {
	e.t.Helper()
	u := strings.TrimSpace(e.ok("web", "url"))
	base, q, ok := strings.Cut(u, "?")
	v, _ := url.ParseQuery(q)
	if !ok || v.Get("token") == "" || !strings.HasPrefix(base, "http://127.0.0.1:") {
		e.t.Fatalf("harn web url printed %q; want http://127.0.0.1:PORT/?token=…", u)
	}
	return board{url: u, base: base, token: v.Get("token")}
}

// noRedirects is a client that shows each answer as it is.
var noRedirects = &http.Client{Timeout: 20 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func do(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	res, err := noRedirects.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return res, string(b)
}

// login opens the URL `harn web url` printed and returns the cookie it
// sets.
func (b board) login(t *testing.T) *http.Cookie {
	t.Helper()
	req, _ := http.NewRequest("GET", b.url, nil)
	res, body := do(t, req)
	if res.StatusCode != 200 || len(res.Cookies()) != 1 {
		t.Fatalf("the URL of harn web url: %d, cookies %v: %.200s", res.StatusCode, res.Cookies(), body)
	}
	return res.Cookies()[0]
}

var (
	csrfMeta   = regexp.MustCompile(`<meta name="harn-csrf" content="([0-9a-f]+)">`)
	requestFor = func(sid string) *regexp.Regexp {
		return regexp.MustCompile(`name="session" value="` + regexp.QuoteMeta(sid) + `">\s*<input type="hidden" name="request" value="([^"]+)">`)
	}
)

// pageForm reads, from the board's page as a browser with cookie sees it,
// the CSRF token and the id of sid's open request.
func (b board) pageForm(t *testing.T, cookie *http.Cookie, sid string) (csrf, request string) {
	t.Helper()
	req, _ := http.NewRequest("GET", b.base, nil)
	req.AddCookie(cookie)
	res, body := do(t, req)
	m, r := csrfMeta.FindStringSubmatch(body), requestFor(sid).FindStringSubmatch(body)
	if res.StatusCode != 200 || m == nil || r == nil {
		t.Fatalf("the board page: %d, no CSRF token or no open request of %s: %.300s", res.StatusCode, sid, body)
	}
	return m[1], r[1]
}

// postAction POSTs an action form with the given headers (a cookie adds
// the board's cookie) and returns the status.
func (b board) postAction(t *testing.T, cookie *http.Cookie, form url.Values, hdr map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", b.base+"action", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if cookie != nil {
		req.AddCookie(cookie)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, body := do(t, req)
	return res.StatusCode, body
}

// origin is the Origin a browser sends from the board's page.
func (b board) origin() string { return strings.TrimSuffix(b.base, "/") }

// boardNode starts a node serving the board on a free loopback port.
func boardNode(t *testing.T, extra ...string) *env {
	e := newEnv(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePorts(t, 1)[0]))
	e.startNode(append([]string{"--http-port", addr}, extra...)...)
	return e
}

// waitingHook starts a hook that waits for an approval of a Bash call
// and returns the channel of its result.
func (e *env) waitingHook(sid string) <-chan result {
	perm := `{"session_id":"` + sid + `","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"rm -rf /important"}}`
	done := make(chan result, 1)
	go func() {
		done <- run(e.t, e.hookEnv(), perm, "hook", "claude-code", "--remote-approve", "--approve-wait", "60s")
	}()
	eventually(e.t, stateTimeout, "the request is pending", func() (bool, string) {
		out := e.ok("agents", "pending", "--json")
		return strings.Contains(out, sid), out
	})
	return done
}

// denyFromTheBoard denies sid's open request from the board's page, as a
// browser does, and checks that the waiting hook's first and only answer
// is that deny: nothing refused before decided for it.
func (e *env) denyFromTheBoard(b board, cookie *http.Cookie, sid string, hook <-chan result) {
	t := e.t
	t.Helper()
	select {
	case r := <-hook:
		t.Fatalf("the hook was answered before the board's deny: %v", r)
	default:
	}
	csrf, reqID := b.pageForm(t, cookie, sid)
	form := url.Values{"csrf": {csrf}, "kind": {"deny"}, "session": {sid}, "request": {reqID}, "confirmed": {"1"}, "text": {"not from the board's page"}}
	if code, body := b.postAction(t, cookie, form, map[string]string{"Origin": b.origin()}); code != 200 {
		t.Fatalf("the deny from the board's page: %d %s", code, body)
	}
	select {
	case r := <-hook:
		if !strings.Contains(r.stdout, `"behavior":"deny"`) {
			t.Fatalf("the hook's answer is not the board's deny (a refused POST decided first?): %v", r)
		}
	case <-time.After(stateTimeout):
		t.Fatal("the waiting hook got no answer from the board's deny")
	}
}

// TestWebURLAnswers200AndSetsTheCookie: the URL `harn web url` prints
// answers 200 and sets an HttpOnly, SameSite=Strict cookie for path /; a
// browser's navigation to it is redirected to the URL without the token;
// later requests pass by the cookie, and a request without either gets
// 401 on loopback with the page that says to run `harn web open`.
func TestWebURLAnswers200AndSetsTheCookie(t *testing.T) {
	e := boardNode(t)
	e.hook("claude-code", claudeStart("cookie-5e55", e.root))
	b := e.board()
	c := b.login(t)
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Value == b.token || strings.Contains(c.Value, b.token) {
		t.Fatalf("cookie %+v; want HttpOnly, SameSite=Strict, Path=/, and not the token itself", c)
	}
	req, _ := http.NewRequest("GET", b.url, nil)
	req.Header.Set("Sec-Fetch-Mode", "navigate") // a browser's tab
	res, _ := do(t, req)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/" || len(res.Cookies()) != 1 {
		t.Fatalf("a browser's navigation to the token URL: %d to %q, cookies %v; want 303 to / with the cookie", res.StatusCode, res.Header.Get("Location"), res.Cookies())
	}
	req, _ = http.NewRequest("GET", b.base, nil)
	req.AddCookie(c)
	if res, body := do(t, req); res.StatusCode != 200 || !strings.Contains(body, "cookie-5e55") {
		t.Fatalf("GET / with the cookie: %d", res.StatusCode)
	}
	req, _ = http.NewRequest("GET", b.base, nil)
	if res, body := do(t, req); res.StatusCode != 401 || !strings.Contains(body, "harn web open") || strings.Contains(body, "cookie-5e55") {
		t.Fatalf("GET / on loopback without the token: %d %q; want 401 and the page that says to run harn web open", res.StatusCode, body)
	}
	// The node keeps its generated token private, and the same across a
	// restart (an open tab's cookie stays good).
	fi, err := os.Stat(filepath.Join(e.dataDir, "http.token"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the generated token file: %v %v", fi, err)
	}
}

// TestBoardPostWithoutMatchingOriginIsRefused: a POST with the board's
// cookie and CSRF token but no Origin (and no Sec-Fetch-Site), a foreign
// Origin, or a cross-site fetch answers 403, and the waiting hook gets no
// decision from it: its only answer is the deny sent later from the
// board's page.
func TestBoardPostWithoutMatchingOriginIsRefused(t *testing.T) {
	e := boardNode(t)
	const sid = "origin-ask-0f"
	hook := e.waitingHook(sid)
	b := e.board()
	c := b.login(t)
	csrf, reqID := b.pageForm(t, c, sid)
	approve := url.Values{"csrf": {csrf}, "kind": {"approve"}, "session": {sid}, "request": {reqID}, "confirmed": {"1"}}
	for name, hdr := range map[string]map[string]string{
		"no Origin":             nil,
		"a foreign Origin":      {"Origin": "http://evil.example"},
		"another port's Origin": {"Origin": "http://127.0.0.1:1"},
		"a cross-site fetch":    {"Sec-Fetch-Site": "cross-site"},
		"a same-site fetch":     {"Sec-Fetch-Site": "same-site"},
	} {
		if code, body := b.postAction(t, c, approve, hdr); code != http.StatusForbidden {
			t.Errorf("an approval with %s: %d %s; want 403", name, code, body)
		}
	}
	e.denyFromTheBoard(b, c, sid, hook)
}

// TestBoardStreamCapAnswers429: past --http-max-client-streams from one
// address, and past --http-max-streams in all, a new event stream gets
// 429; the streams already open keep going.
func TestBoardStreamCapAnswers429(t *testing.T) {
	e := boardNode(t, "--http-max-streams", "3", "--http-max-client-streams", "2")
	b := e.board()
	open := func(ip string) int {
		t.Helper()
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
		c := &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		req, _ := http.NewRequestWithContext(ctx, "GET", b.base+"events", nil)
		req.Header.Set("Authorization", "Bearer "+b.token)
		res, err := c.Do(req)
		if err != nil {
			t.Fatalf("a stream from %s: %v", ip, err)
		}
		t.Cleanup(func() { res.Body.Close() })
		if res.StatusCode == 200 {
			// The hello event: the stream holds its slot now.
			line, err := bufio.NewReader(res.Body).ReadString('\n')
			if err != nil || !strings.HasPrefix(line, "retry:") {
				t.Fatalf("a stream from %s: %q %v", ip, line, err)
			}
		}
		return res.StatusCode
	}
	for i, c := range []struct {
		ip   string
		code int
	}{{"127.0.0.1", 200}, {"127.0.0.1", 200}, {"127.0.0.1", 429}, {"127.0.0.2", 200}, {"127.0.0.3", 429}} {
		if got := open(c.ip); got != c.code {
			t.Fatalf("stream %d, from %s: %d, want %d", i+1, c.ip, got, c.code)
		}
	}
}

// TestSlowPostBodyIsCutByTheReadTimeout: a POST whose body never arrives
// whole is dropped at --http-read-timeout (1 s here; the default is 30 s,
// past this test's 10 s bound), and the waiting hook gets no decision
// from it.
func TestSlowPostBodyIsCutByTheReadTimeout(t *testing.T) {
	e := boardNode(t, "--http-read-timeout", "1s")
	const sid = "slow-ask-0f"
	hook := e.waitingHook(sid)
	b := e.board()
	c := b.login(t)
	csrf, reqID := b.pageForm(t, c, sid)
	body := url.Values{"csrf": {csrf}, "kind": {"approve"}, "session": {sid}, "request": {reqID}, "confirmed": {"1"}}.Encode()
	hostport := strings.TrimSuffix(strings.TrimPrefix(b.base, "http://"), "/")
	conn, err := net.DialTimeout("tcp", hostport, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST /action HTTP/1.1\r\nHost: %s\r\nOrigin: %s\r\nCookie: %s=%s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n%s",
		hostport, b.origin(), c.Name, c.Value, len(body)+64, body)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(conn)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the board held a POST whose body never ended for 10 s (read %q)", got)
	}
	if strings.HasPrefix(string(got), "HTTP/1.1 200") {
		t.Fatalf("the unfinished POST acted: %q", got)
	}
	t.Logf("the unfinished body was cut after %v: %.40q", time.Since(start), got)
	e.denyFromTheBoard(b, c, sid, hook)
}

// TestBoardTokenFileMustBePrivate: --http-token-file is read once and
// must be 0600 (else exit 13, one line); its token is the board's;
// --http-token with it is a usage error; a scrape-only token from
// --metrics-token-file opens /metrics and nothing else.
func TestBoardTokenFileMustBePrivate(t *testing.T) {
	e := newEnv(t)
	tokFile, scrapeFile := filepath.Join(e.root, "board.token"), filepath.Join(e.root, "scrape.token")
	const token, scrape = "e2e-file-token-0123456789", "e2e-scrape-token-0123456789"
	os.WriteFile(tokFile, []byte(token+"\n"), 0o644)
	os.WriteFile(scrapeFile, []byte(scrape+"\n"), 0o600)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePorts(t, 1)[0]))
	args := []string{"node", "--data-dir", e.dataDir, "--socket", e.socket, "--http-port", addr, "--http-token-file", tokFile}
	r := e.harn("", args...)
	if r.code != exitPermission || !strings.Contains(r.stderr, "chmod 600") {
		t.Fatalf("a 0644 --http-token-file: %v; want exit %d naming chmod 600", r, exitPermission)
	}
	oneLineErr(t, r)
	os.Chmod(tokFile, 0o600)
	r = e.harn("", append(args, "--http-token", token)...)
	if r.code != 2 || !strings.Contains(r.stderr, "--http-token-file") {
		t.Fatalf("--http-token with --http-token-file: %v; want exit 2", r)
	}
	e.startNode("--http-port", addr, "--http-token-file", tokFile, "--metrics-token-file", scrapeFile)
	b := e.board()
	if b.token != token {
		t.Fatalf("harn web url carries %q, want the file's token", b.token)
	}
	get := func(path, bearer string) int {
		req, _ := http.NewRequest("GET", b.base+path, nil)
		req.Header.Set("Authorization", "Bearer "+bearer)
		res, _ := do(t, req)
		return res.StatusCode
	}
	for _, c := range []struct {
		path, bearer string
		code         int
	}{{"metrics", scrape, 200}, {"metrics", token, 200}, {"", scrape, 403}, {"events", scrape, 403}, {"metrics", "wrong", 401}} {
		if got := get(c.path, c.bearer); got != c.code {
			t.Errorf("/%s with %q: %d, want %d", c.path, c.bearer, got, c.code)
		}
	}
}

// TestWebOpenKeepsTheTokenOutOfTheProcessList: `harn web open` hands the
// opener a private redirect file, not the URL: a token in an argv shows
// in ps. Without an opener it prints the URL and says so.
func TestWebOpenKeepsTheTokenOutOfTheProcessList(t *testing.T) {
	e := boardNode(t)
	b := e.board()
	bin := filepath.Join(e.root, "bin")
	os.MkdirAll(bin, 0o755)
	argsFile := filepath.Join(e.root, "opener-args")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + argsFile + "\n"
	for _, name := range []string{"xdg-open", "open"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	withPath := func(path string) []string {
		var out []string
		for _, kv := range e.hookEnv() {
			if !strings.HasPrefix(kv, "PATH=") {
				out = append(out, kv)
			}
		}
		return append(out, "PATH="+path)
	}
	r := run(t, withPath(bin), "", "web", "open")
	if r.code != 0 {
		t.Fatalf("harn web open: %v", r)
	}
	arg, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatalf("the opener did not run: %v", err)
	}
	if strings.Contains(string(arg), b.token) || !strings.HasPrefix(string(arg), "file://") {
		t.Fatalf("the opener got %q; want a file:// path without the token", arg)
	}
	page := strings.TrimPrefix(strings.TrimSpace(string(arg)), "file://")
	fi, err := os.Stat(page)
	html, _ := os.ReadFile(page)
	if err != nil || fi.Mode().Perm() != 0o600 || !strings.Contains(string(html), "token="+b.token) {
		t.Fatalf("the redirect file %s: %v %v; want 0600, redirecting to the token URL", page, fi, err)
	}
	r = run(t, withPath(filepath.Join(e.root, "empty")), "", "web", "open")
	if r.code != 0 || strings.TrimSpace(r.stdout) != b.url || !strings.Contains(r.stderr, "xdg-open") {
		t.Fatalf("harn web open without an opener: %v; want the URL and a word saying none was found", r)
	}
}

// The second local user of TestAnotherLocalUserCannotReachTheBoard.
const (
	otherUser       = "harn-e2e-other"
	helperOtherUser = "other-user" // the helper's mode: try the board as another uid
)

// runOtherUserHelper runs as the other uid: it tries to read the node's
// token and URL files, to connect to the node's socket and call List on
// the local wire, then GETs the board and POSTs an approval without a
// token. It prints one line per try.
func runOtherUserHelper() int {
	data, base, sid := os.Getenv("HARN_E2E_DATA"), os.Getenv("HARN_E2E_BASE"), os.Getenv("HARN_E2E_SID")
	if c, err := net.DialTimeout("unix", os.Getenv("HARN_E2E_SOCKET"), 5*time.Second); err != nil {
		fmt.Println("dial socket:", err)
	} else {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write(append([]byte("harn/l1\n"), 0, 0, 0, 21, 0x0a, 19))
		c.Write([]byte("/harn.v1.Local/List"))
		b := make([]byte, 512)
		n, err := c.Read(b)
		fmt.Printf("dial socket: answered %d bytes (%v)\n", n, err)
		c.Close()
	}
	for _, f := range []string{"http.token", "web.url"} {
		_, err := os.ReadFile(filepath.Join(data, f))
		fmt.Printf("read %s: %v\n", f, err)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	res, err := c.Get(base)
	if err != nil {
		fmt.Println("get:", err)
		return 1
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	fmt.Printf("get: %d %s\n", res.StatusCode, strings.Join(strings.Fields(string(b)), " "))
	form := url.Values{"kind": {"approve"}, "session": {sid}, "request": {"any"}, "confirmed": {"1"}, "csrf": {strings.Repeat("0", 64)}}
	req, _ := http.NewRequest("POST", base+"action", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err = c.Do(req)
	if err != nil {
		fmt.Println("post:", err)
		return 1
	}
	res.Body.Close()
	fmt.Printf("post: %d\n", res.StatusCode)
	return 0
}

// TestAnotherLocalUserCannotReachTheBoard: a second uid cannot get the
// board's token (the data dir is 0700; `harn web url` as that user is
// refused by the socket owner check, exit 13), and its GET / and its
// approval POST answer 401; its raw connection to the node's socket (to
// speak the local wire) is refused; the root's waiting hook gets no
// decision from it. It needs root; under CI=true it adds the user with useradd.
func TestAnotherLocalUserCannotReachTheBoard(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("skipped: needs root to run a second local user (CI runs it as root, under CI=true)")
	}
	uid, gid := otherUID(t)
	e := boardNode(t)
	const sid = "local-ask-0f"
	hook := e.waitingHook(sid)
	b := e.board()
	if fi, err := os.Stat(e.dataDir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the data dir: %v %v; want 0700", fi, err)
	}

	// Binaries the other user may run: harn, and this test binary as the
	// helper that tries the board.
	dir, err := os.MkdirTemp("", "harn-other-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	self, _ := os.Executable()
	harn, helper := filepath.Join(dir, "harn"), filepath.Join(dir, "e2e.test")
	harnd := filepath.Join(filepath.Dir(harnBin), "harnd")
	for src, dst := range map[string]string{harnBin: harn, harnd: filepath.Join(dir, "harnd"), self: helper} {
		if err := copyExecutable(src, dst); err != nil {
			t.Fatal(err)
		}
	}
	as := func(env []string, bin string, args ...string) result {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(cleanEnv(dir), env...)
		cmd.Dir = dir
		cmd.SysProcAttr = otherCredential(uid, gid)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		r := result{args: args, stdout: out.String(), stderr: errb.String()}
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%s as %s: %v", bin, otherUser, err)
		}
		return r
	}
	r := as(nil, harn, "web", "url", "--data-dir", e.dataDir, "--socket", e.socket)
	if r.code != exitPermission || strings.Contains(r.stdout, b.token) {
		t.Fatalf("harn web url as %s: %v; want exit %d and no URL", otherUser, r, exitPermission)
	}
	oneLineErr(t, r)
	r = as([]string{helperEnv + "=" + helperOtherUser, "HARN_E2E_DATA=" + e.dataDir, "HARN_E2E_BASE=" + b.base, "HARN_E2E_SID=" + sid,
		"HARN_E2E_SOCKET=" + e.socket}, helper)
	if r.code != 0 {
		t.Fatalf("the helper as %s: %v", otherUser, r)
	}
	for _, want := range []string{"read http.token: open " + filepath.Join(e.dataDir, "http.token") + ": permission denied",
		"read web.url: open " + filepath.Join(e.dataDir, "web.url") + ": permission denied",
		"get: 401 ", "harn web open", "post: 401", "dial socket: dial unix " + e.socket + ": connect: permission denied"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("as %s: %q lacks %q", otherUser, r.stdout, want)
		}
	}
	if strings.Contains(r.stdout, sid) || strings.Contains(r.stdout, b.token) {
		t.Errorf("as %s, the board leaked the session or the token: %s", otherUser, r.stdout)
	}
	e.denyFromTheBoard(b, b.login(t), sid, hook)
}

// otherUID is the second local user's uid and gid, added with useradd
// when it does not exist yet.
func otherUID(t *testing.T) (uint32, uint32) {
	t.Helper()
	look := func() (uint32, uint32, bool) {
		out, err := exec.Command("id", "-u", otherUser).Output()
		if err != nil {
			return 0, 0, false
		}
		g, err := exec.Command("id", "-g", otherUser).Output()
		if err != nil {
			return 0, 0, false
		}
		u, _ := strconv.ParseUint(strings.TrimSpace(string(out)), 10, 32)
		gg, _ := strconv.ParseUint(strings.TrimSpace(string(g)), 10, 32)
		return uint32(u), uint32(gg), true
	}
	if u, g, ok := look(); ok {
		return u, g
	}
	if os.Getenv("CI") != "true" {
		t.Skipf("skipped: no local user %s; under CI=true the test adds it with useradd", otherUser)
	}
	if out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", otherUser).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v: %s", otherUser, err, out)
	}
	u, g, ok := look()
	if !ok {
		t.Fatalf("%s was added but id does not find it", otherUser)
	}
	return u, g
}

func copyExecutable(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return os.Chmod(dst, 0o755)
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func otherCredential(uid, gid uint32) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
}
