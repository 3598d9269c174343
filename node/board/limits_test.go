package board

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/util/clock"
)

// streamFrom opens /events from the local address ip (any of 127.0.0.0/8
// reaches a board on 127.0.0.1) and returns the status, and the reader
// of a stream that answered 200.
func streamFrom(t *testing.T, s *Server, ip string) (int, *bufio.Reader, context.CancelFunc) {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	c := &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.Addr()+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode == http.StatusTooManyRequests && (res.Header.Get("Retry-After") == "" || !strings.Contains(string(b), "too many event streams")) {
			t.Errorf("429 without Retry-After or a reason: %q", b)
		}
		return res.StatusCode, nil, cancel
	}
	r := bufio.NewReader(res.Body)
	frame(t, r, 5*time.Second) // hello: the stream holds its slot
	return res.StatusCode, r, cancel
}

// TestStreamsOverTheCapGet429: a board holds at most MaxStreams event
// streams and one client (remote address) at most MaxClientStreams; one
// more gets 429, and a slot frees when a stream ends.
func TestStreamsOverTheCapGet429(t *testing.T) {
	s, _ := openServer(t, func(c *Config) { c.Limits.MaxStreams, c.Limits.MaxClientStreams = 3, 2 })
	want := func(ip string, code int) context.CancelFunc {
		t.Helper()
		got, _, cancel := streamFrom(t, s, ip)
		if got != code {
			t.Fatalf("a stream from %s: %d, want %d (open: %d)", ip, got, code, s.Streams())
		}
		return cancel
	}
	first := want("127.0.0.1", 200)
	want("127.0.0.1", 200)
	want("127.0.0.1", http.StatusTooManyRequests) // the client's cap
	want("127.0.0.2", 200)
	want("127.0.0.3", http.StatusTooManyRequests) // the board's cap
	if n := s.Streams(); n != 3 {
		t.Fatalf("%d streams open, want 3", n)
	}
	first()
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; s.Streams() != 2 && i < 1000 && time.Now().Before(deadline); i++ {
		time.Sleep(5 * time.Millisecond)
	}
	want("127.0.0.3", 200)
}

// TestStreamOutlivesTheReadAndWriteTimeouts: the server's read and write
// timeouts bound every request, but an event stream gets a fresh write
// deadline per write and no read deadline: its pings keep coming long
// after both timeouts passed.
func TestStreamOutlivesTheReadAndWriteTimeouts(t *testing.T) {
	s, _ := openServer(t, func(c *Config) {
		c.Limits.ReadTimeout, c.Limits.WriteTimeout = 150*time.Millisecond, 150*time.Millisecond
		c.Ping = 400 * time.Millisecond
		// The socket's deadlines are wall time: so must be the pings
		// that have to outlive them.
		c.Clock = clock.Real{}
	})
	_, r := stream(t, s)
	frame(t, r, 5*time.Second) // hello
	start := time.Now()
	for i := 0; i < 2; i++ {
		if f := frame(t, r, 5*time.Second); f != ": ping\n" {
			t.Fatalf("frame %q, want a ping", f)
		}
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("two pings within %v: the test proves nothing", d)
	}
}

// rawRequest writes head (and body) on a new connection and reads until
// the server answers or closes, within 10 s. It returns what the server
// sent and how long it took.
func rawRequest(t *testing.T, s *Server, head, body string) (string, time.Duration) {
	t.Helper()
	c, err := net.DialTimeout("tcp", s.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	if _, err := io.WriteString(c, head+body); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the server held the connection for 10 s (read %q)", b)
	}
	return string(b), time.Since(start)
}

// TestSlowPostBodyIsCutAtTheReadTimeout: a POST whose body never
// arrives whole is dropped at the read timeout, and nothing acts; so are
// headers that never end.
func TestSlowPostBodyIsCutAtTheReadTimeout(t *testing.T) {
	s, _, acts := newTestServer(t, func(c *Config) {
		c.Limits.ReadTimeout, c.Limits.ReadHeaderTimeout = 300*time.Millisecond, 300*time.Millisecond
	})
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	body := form(s, "kind", "approve", "session", "s-need", "request", "req-1", "confirmed", "1")
	head := fmt.Sprintf("POST /action HTTP/1.1\r\nHost: %s\r\nOrigin: http://%s\r\nCookie: %s=%s\r\n"+
		"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n", s.Addr(), s.Addr(), s.cookieName, s.cookie, len(body)+100)
	got, took := rawRequest(t, s, head, body)
	if strings.HasPrefix(got, "HTTP/1.1 200") || len(acts.log()) != 0 {
		t.Fatalf("a body that never ended acted: %q, calls %v", got, acts.log())
	}
	t.Logf("the slow body was cut after %v: %.40q", took, got)
	_, took = rawRequest(t, s, "GET / HTTP/1.1\r\nHost: "+s.Addr()+"\r\nX-Slow: ", "")
	t.Logf("the unfinished headers were cut after %v", took)
}

// TestBodyOverTheCapIsRefused: a form over MaxBody gets 413 and does not
// act.
func TestBodyOverTheCapIsRefused(t *testing.T) {
	s, _, acts := newTestServer(t, func(c *Config) { c.Limits.MaxBody = 1 << 10 })
	body := form(s, "kind", "steer", "session", "s-task", "task", "t-42", "confirmed", "1", "text", strings.Repeat("x", 2<<10))
	if w := post(t, s, body, map[string]string{"Accept": "application/json"}); w.Code != http.StatusRequestEntityTooLarge || len(acts.log()) != 0 {
		t.Fatalf("a 2 KiB form on a 1 KiB cap: %d, calls %v", w.Code, acts.log())
	}
}

func TestLimitsDefaults(t *testing.T) {
	if got := (Limits{}).WithDefaults(); got != DefaultLimits {
		t.Fatalf("zero limits: %+v", got)
	}
	l := Limits{ReadTimeout: time.Second, ReadHeaderTimeout: time.Minute, MaxStreams: 4, MaxClientStreams: 9}.WithDefaults()
	if l.ReadHeaderTimeout != time.Second || l.MaxClientStreams != 4 {
		t.Fatalf("the header timeout and the client cap exceed their bounds: %+v", l)
	}
}
