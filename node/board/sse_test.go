package board

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// frame reads one server-sent event (up to the blank line) with a bound.
func frame(t *testing.T, r *bufio.Reader, within time.Duration) string {
	t.Helper()
	type res struct {
		s   string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		var b strings.Builder
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				ch <- res{b.String(), err}
				return
			}
			if line == "\n" {
				ch <- res{b.String(), nil}
				return
			}
			b.WriteString(line)
		}
	}()
	select {
	case x := <-ch:
		if x.err != nil {
			t.Fatalf("stream: %v (read %q)", x.err, x.s)
		}
		return x.s
	case <-time.After(within):
		t.Fatalf("no event within %v", within)
	}
	return ""
}

func openServer(t *testing.T, mod func(*Config)) (*Server, *fakeSource) {
	t.Helper()
	s, src, _ := newTestServer(t, mod)
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	return s, src
}

func stream(t *testing.T, s *Server) (*http.Response, *bufio.Reader) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.Addr()+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	return res, bufio.NewReader(res.Body)
}

func TestSSEFraming(t *testing.T) {
	s, src := openServer(t, nil)
	_, r := stream(t, s)
	if f := frame(t, r, 5*time.Second); f != "retry: 1000\nevent: hello\ndata: {}\n" {
		t.Fatalf("hello frame %q", f)
	}
	src.notify()
	if f := frame(t, r, 5*time.Second); f != "id: 1\nevent: change\ndata: {\"seq\":1}\n" {
		t.Fatalf("change frame %q", f)
	}
	// The second change comes within the minimum interval (the clock has
	// not moved): it is held until the interval has passed.
	src.notify()
	clk := fakeClock(t, s)
	if !clk.BlockUntil(2, 5*time.Second) { // the ping ticker and the hold
		t.Fatal("the second change was not held")
	}
	clk.Advance(s.cfg.MinInterval)
	if f := frame(t, r, 5*time.Second); f != "id: 2\nevent: change\ndata: {\"seq\":2}\n" {
		t.Fatalf("second change frame %q", f)
	}
}

func TestSSEPingKeepsTheStreamAlive(t *testing.T) {
	s, _ := openServer(t, func(c *Config) { c.Ping = 20 * time.Second })
	_, r := stream(t, s)
	frame(t, r, 5*time.Second) // hello
	clk := fakeClock(t, s)
	if !clk.BlockUntil(1, 5*time.Second) {
		t.Fatal("the stream armed no ping ticker")
	}
	clk.Advance(20 * time.Second)
	if f := frame(t, r, 5*time.Second); f != ": ping\n" {
		t.Fatalf("ping frame %q", f)
	}
}

func TestSSEBurstIsCoalescedIntoOnePush(t *testing.T) {
	s, src := openServer(t, func(c *Config) { c.MinInterval = 300 * time.Millisecond })
	_, r := stream(t, s)
	frame(t, r, 5*time.Second)
	clk := fakeClock(t, s)
	src.notify()
	frame(t, r, 5*time.Second) // the first change goes out at once
	for i := 0; i < 50; i++ {
		src.notify()
	}
	if !clk.BlockUntil(2, 5*time.Second) { // the ping ticker and the hold
		t.Fatal("the burst was not held")
	}
	// The hold falls due at the minimum interval, not before: the fake
	// clock fires nothing short of it.
	clk.Advance(299 * time.Millisecond)
	if due, ok := clk.NextDue(); !ok || due.Sub(t0) < 300*time.Millisecond {
		t.Fatalf("the held push falls due at %v after the first, before the minimum interval", due.Sub(t0))
	}
	clk.Advance(time.Millisecond)
	f := frame(t, r, 5*time.Second) // the burst is held, then sent once
	if !strings.Contains(f, "id: 2\n") {
		t.Fatalf("frame %q", f)
	}
}

func TestCoalescerSpacesPushes(t *testing.T) {
	gap := 200 * time.Millisecond
	c := coalescer{gap: gap}
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	if send, _ := c.change(at(0)); !send {
		t.Fatal("the first change waits")
	}
	send, wait := c.change(at(50))
	if send || wait != 150*time.Millisecond {
		t.Fatalf("change within the gap: send=%v wait=%v", send, wait)
	}
	for ms := 60; ms < 200; ms += 10 {
		if send, wait := c.change(at(ms)); send || wait != 0 {
			t.Fatalf("held change at %dms: send=%v wait=%v", ms, send, wait)
		}
	}
	if !c.flush(at(200)) {
		t.Fatal("the held change is not flushed")
	}
	if c.flush(at(210)) {
		t.Fatal("a flush without a held change pushed")
	}
	if send, wait := c.change(at(450)); !send || wait != 0 {
		t.Fatalf("after the gap: send=%v wait=%v", send, wait)
	}
	// At most one push per gap over any run of changes.
	c = coalescer{gap: gap}
	pushes, due := 0, time.Time{}
	for ms := 0; ms <= 1000; ms += 5 {
		now := at(ms)
		if !due.IsZero() && !now.Before(due) {
			if c.flush(now) {
				pushes++
			}
			due = time.Time{}
		}
		send, wait := c.change(now)
		if send {
			pushes++
		}
		if wait > 0 {
			due = now.Add(wait)
		}
	}
	if pushes < 5 || pushes > 6 {
		t.Fatalf("%d pushes over 1s at a 200ms gap", pushes)
	}
}

func TestSSEEndsWhenTheSourceEndsTheSubscription(t *testing.T) {
	s, src := openServer(t, nil)
	_, r := stream(t, s)
	frame(t, r, 5*time.Second)
	src.kick()
	done := make(chan error, 1)
	go func() { _, err := r.ReadString('\n'); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the stream went on")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not end")
	}
}

func TestCloseStopsStreamsAndWaits(t *testing.T) {
	s, src := openServer(t, nil)
	var readers []*bufio.Reader
	for i := 0; i < 3; i++ {
		_, r := stream(t, s)
		frame(t, r, 5*time.Second)
		readers = append(readers, r)
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return with streams open")
	}
	for _, r := range readers {
		if _, err := r.ReadString('\n'); err == nil {
			t.Fatal("a stream outlived Close")
		}
	}
	if n := src.subscribers(); n != 0 {
		t.Fatalf("%d subscriptions left open after Close", n)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := s.Open(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Open after Close: %v", err)
	}
}

func TestOpenTakenPortReturnsTypedError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s, _, _ := newTestServer(t, func(c *Config) { c.Addr = ln.Addr().String() })
	err = s.Open()
	var le *ListenError
	if !errors.As(err, &le) || le.Addr != ln.Addr().String() {
		t.Fatalf("%v: not a ListenError naming the address", err)
	}
	if !errors.Is(err, ErrAddrInUse) || !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("%v: does not match ErrAddrInUse", err)
	}
	if !strings.Contains(err.Error(), ln.Addr().String()) || !strings.Contains(err.Error(), "--http-port") {
		t.Fatalf("message %q", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close after a failed Open: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestOpenTwiceRefused(t *testing.T) {
	s, _ := openServer(t, nil)
	if err := s.Open(); !errors.Is(err, ErrOpen) {
		t.Fatalf("second Open: %v", err)
	}
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") || strings.HasSuffix(s.URL(), ":0/") {
		t.Fatalf("URL after Open %q", s.URL())
	}
}

func TestCloseWithoutOpen(t *testing.T) {
	s, _, _ := newTestServer(t, nil)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	w := get(t, s.Handler(), "/")
	if w.Code != http.StatusServiceUnavailable {
		t.Fatalf("handler after Close: %d", w.Code)
	}
}
