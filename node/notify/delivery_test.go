package notify

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// target is a real local HTTP server that records what it receives and
// answers with the statuses it is given (then 200).
type target struct {
	srv *httptest.Server

	mu       sync.Mutex
	got      []received
	statuses []int
	down     bool
	header   http.Header // extra answer headers
	hang     chan struct{}
}

type received struct {
	path   string
	header http.Header
	body   string
}

func newTarget(t *testing.T) *target {
	t.Helper()
	tg := &target{header: http.Header{}}
	tg.srv = httptest.NewServer(http.HandlerFunc(tg.serve))
	if !strings.HasPrefix(tg.srv.URL, "http://127.0.0.1:") {
		t.Fatalf("server at %s, want 127.0.0.1", tg.srv.URL)
	}
	t.Cleanup(tg.srv.Close)
	return tg
}

func (tg *target) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	tg.mu.Lock()
	tg.got = append(tg.got, received{path: r.URL.Path, header: r.Header.Clone(), body: string(body)})
	status := http.StatusOK
	switch {
	case tg.down:
		status = http.StatusServiceUnavailable
	case len(tg.statuses) > 0:
		status, tg.statuses = tg.statuses[0], tg.statuses[1:]
	}
	for k, vs := range tg.header {
		w.Header()[k] = vs
	}
	hang := tg.hang
	tg.mu.Unlock()
	if hang != nil {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}
	w.WriteHeader(status)
}

func (tg *target) requests() []received {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return slices.Clone(tg.got)
}

func (tg *target) count() int {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return len(tg.got)
}

func (tg *target) setDown(b bool) {
	tg.mu.Lock()
	tg.down = b
	tg.mu.Unlock()
}

// liveRig is an engine on a fake clock that posts through the real
// HTTPSender.
func liveRig(t *testing.T, cfg Config) (*Engine, *fakeClock) {
	t.Helper()
	clk := newFakeClock()
	cfg.Logger = quiet()
	if cfg.Jitter == nil {
		cfg.Jitter = noJitter
	}
	if cfg.Debounce == 0 {
		cfg.Debounce = time.Second
	}
	e := New(cfg, clk, NewHTTPSender(5*time.Second, true), nil)
	t.Cleanup(func() { _ = e.Close() })
	return e, clk
}

func stat(t *testing.T, e *Engine, id string) WebhookStats {
	t.Helper()
	for _, s := range e.Stats().Webhooks {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("no stats for %s", id)
	return WebhookStats{}
}

// waitSleeping waits until the fake clock holds exactly one timer (a
// worker's backoff) and returns its duration.
func waitSleeping(t *testing.T, clk *fakeClock) time.Duration {
	t.Helper()
	var d time.Duration
	eventually(t, "the worker to wait for a retry", func() bool {
		p := clk.pending()
		if len(p) == 1 {
			d = p[0]
			return true
		}
		return false
	})
	return d
}

func TestDeliveryOfEachFormatToRealServer(t *testing.T) {
	tg := newTarget(t)
	e, clk := liveRig(t, Config{})
	var hooks []Webhook
	for _, f := range Formats {
		hooks = append(hooks, mustHook(t, tg.srv.URL+"/"+string(f), "", string(f)))
	}
	if err := e.SetWebhooks(hooks); err != nil {
		t.Fatal(err)
	}
	tr := blockedTransition()
	e.Observe([]Session{tr.Session})
	clk.Advance(time.Second)
	eventually(t, "four deliveries", func() bool { return tg.count() == 4 })
	for _, r := range tg.requests() {
		switch r.path {
		case "/json":
			var p Payload
			if err := json.Unmarshal([]byte(r.body), &p); err != nil || p.Schema != SchemaV1 || p.Kind != KindBlocked ||
				p.Session.Reason != "waiting for repository access" || r.header.Get("Content-Type") != "application/json" {
				t.Errorf("json: %s %v", r.body, err)
			}
		case "/slack":
			var m map[string]string
			if err := json.Unmarshal([]byte(r.body), &m); err != nil || !strings.Contains(m["text"], "is blocked: waiting for repository access") {
				t.Errorf("slack: %s", r.body)
			}
		case "/discord":
			var m map[string]any
			if err := json.Unmarshal([]byte(r.body), &m); err != nil || !strings.Contains(m["content"].(string), "is blocked") {
				t.Errorf("discord: %s", r.body)
			}
		case "/ntfy":
			if !strings.HasPrefix(r.body, "Sable (claude-code on buildbox) is blocked") || r.header.Get("Title") != "harn: Sable is blocked" ||
				r.header.Get("Priority") != "4" || r.header.Get("Tags") != "warning,harn" {
				t.Errorf("ntfy: %q %v", r.body, r.header)
			}
		default:
			t.Errorf("unexpected path %s", r.path)
		}
	}
	for _, h := range hooks {
		eventually(t, "sent counts", func() bool { return stat(t, e, h.ID).Sent == 1 })
		if s := stat(t, e, h.ID); s.Sent != 1 || s.Failed != 0 || s.Queued != 0 {
			t.Errorf("%s: %+v", h.Format, s)
		}
	}
}

func TestRetryAfterServerReturned500Then200(t *testing.T) {
	tg := newTarget(t)
	tg.statuses = []int{500}
	e, clk := liveRig(t, Config{BackoffBase: 2 * time.Second})
	h := mustHook(t, tg.srv.URL+"/hook", "", "json")
	_ = e.SetWebhooks([]Webhook{h})
	e.Observe([]Session{needsInput("s1")})
	clk.Advance(time.Second)
	if d := waitSleeping(t, clk); d != 2*time.Second {
		t.Fatalf("first retry after %v, want 2s", d)
	}
	if s := stat(t, e, h.ID); s.Queued != 1 || s.Retries != 1 || !strings.Contains(s.LastError, "500") {
		t.Fatalf("while waiting: %+v", s)
	}
	clk.Advance(2 * time.Second)
	eventually(t, "the retry to be accepted", func() bool { return stat(t, e, h.ID).Sent == 1 })
	reqs := tg.requests()
	if len(reqs) != 2 || reqs[0].body != reqs[1].body {
		t.Fatalf("want the same message twice, got %d requests", len(reqs))
	}
	if s := stat(t, e, h.ID); s.Queued != 0 || s.Failed != 0 {
		t.Fatalf("after: %+v", s)
	}
}

func TestBackoffTimingFollowsFakeClock(t *testing.T) {
	tg := newTarget(t)
	tg.statuses = []int{500, 502, 503, 500, 500}
	e, clk := liveRig(t, Config{BackoffBase: time.Second, BackoffMax: 4 * time.Second})
	h := mustHook(t, tg.srv.URL+"/hook", "", "json")
	_ = e.SetWebhooks([]Webhook{h})
	e.Observe([]Session{needsInput("s1")})
	clk.Advance(time.Second)
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second} {
		if d := waitSleeping(t, clk); d != want {
			t.Fatalf("retry %d after %v, want %v", i+1, d, want)
		}
		clk.Advance(want - time.Millisecond)
		if n := len(clk.pending()); n != 1 {
			t.Fatalf("retry %d ran before its delay", i+1)
		}
		clk.Advance(time.Millisecond)
		eventually(t, "the retry", func() bool { return tg.count() == i+2 })
	}
	eventually(t, "delivery", func() bool { return stat(t, e, h.ID).Sent == 1 })
	if s := stat(t, e, h.ID); s.Retries != 5 {
		t.Fatalf("%+v", s)
	}
}

func TestEqualJitterStaysWithinHalfAndFull(t *testing.T) {
	for _, d := range []time.Duration{0, 1, 2, time.Second, 5 * time.Minute} {
		for range 200 {
			if j := EqualJitter(d); j < d/2 || j > d {
				t.Fatalf("jitter of %v gave %v", d, j)
			}
		}
	}
	c := Config{BackoffBase: time.Second, BackoffMax: time.Minute}
	for attempt, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 6: 32 * time.Second, 7: time.Minute, 1000: time.Minute} {
		if got := c.Backoff(attempt); got != want {
			t.Errorf("attempt %d: %v, want %v", attempt, got, want)
		}
	}
}

func TestQueueBoundAndOverflowCountWhileServerDown(t *testing.T) {
	tg := newTarget(t)
	tg.setDown(true)
	e, clk := liveRig(t, Config{QueueSize: 4, BackoffBase: time.Minute, Debounce: 3 * time.Second})
	h := mustHook(t, tg.srv.URL+"/hook", "", "json")
	_ = e.SetWebhooks([]Webhook{h})

	// s0 is attempted, refused, and waits a minute for its retry.
	e.Observe([]Session{needsInput("s0")})
	clk.Advance(3 * time.Second)
	waitSleeping(t, clk)

	// Nine more while the target is down: four wait, five are pushed out.
	var views []Session
	for i := range 10 {
		views = append(views, needsInput("s"+strconv.Itoa(i)))
	}
	e.Observe(views)
	clk.Advance(3 * time.Second)
	s := stat(t, e, h.ID)
	if s.Queued != 5 || s.Dropped != 5 || s.Sent != 0 || s.Failed != 0 {
		t.Fatalf("while down: %+v", s)
	}

	tg.setDown(false)
	clk.Advance(time.Minute)
	eventually(t, "the queue to drain", func() bool { return stat(t, e, h.ID).Sent == 5 })
	var ids []string
	for _, r := range tg.requests() {
		var p Payload
		if err := json.Unmarshal([]byte(r.body), &p); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.Session.ID)
	}
	if want := []string{"s0", "s0", "s6", "s7", "s8", "s9"}; !slices.Equal(ids, want) {
		t.Fatalf("delivered %v, want %v (the oldest waiting are dropped)", ids, want)
	}
	if s := stat(t, e, h.ID); s.Queued != 0 || s.Dropped != 5 {
		t.Fatalf("after: %+v", s)
	}
}

func TestPermanentRefusalIsNotRetried(t *testing.T) {
	tg := newTarget(t)
	tg.statuses = []int{404}
	e, clk := liveRig(t, Config{})
	h := mustHook(t, tg.srv.URL+"/gone", "", "json")
	_ = e.SetWebhooks([]Webhook{h})
	e.Observe([]Session{needsInput("s1")})
	clk.Advance(time.Second)
	eventually(t, "the refusal to count", func() bool { return stat(t, e, h.ID).Failed == 1 })
	if s := stat(t, e, h.ID); s.Retries != 0 || s.Queued != 0 || !strings.Contains(s.LastError, "404") {
		t.Fatalf("%+v", s)
	}
	if len(clk.pending()) != 0 || tg.count() != 1 {
		t.Fatal("a permanent refusal was retried")
	}
}

func TestMaxAttemptsBoundsRetries(t *testing.T) {
	tg := newTarget(t)
	tg.setDown(true)
	e, clk := liveRig(t, Config{MaxAttempts: 3})
	h := mustHook(t, tg.srv.URL+"/hook", "", "json")
	_ = e.SetWebhooks([]Webhook{h})
	e.Observe([]Session{needsInput("s1")})
	clk.Advance(time.Second)
	clk.Advance(waitSleeping(t, clk))
	clk.Advance(waitSleeping(t, clk))
	eventually(t, "the message to be given up", func() bool { return stat(t, e, h.ID).Failed == 1 })
	if tg.count() != 3 || len(clk.pending()) != 0 {
		t.Fatalf("%d attempts, pending %v", tg.count(), clk.pending())
	}
}

func TestMaxAgeBoundsRetries(t *testing.T) {
	tg := newTarget(t)
	tg.setDown(true)
	e, clk := liveRig(t, Config{MaxAge: 10 * time.Second, BackoffBase: 4 * time.Second})
	h := mustHook(t, tg.srv.URL+"/hook", "", "json")
	_ = e.SetWebhooks([]Webhook{h})
	e.Observe([]Session{needsInput("s1")})
	clk.Advance(time.Second)
	clk.Advance(waitSleeping(t, clk)) // 4 s old
	clk.Advance(waitSleeping(t, clk)) // 12 s old: the third failure gives up
	eventually(t, "the message to be given up", func() bool { return stat(t, e, h.ID).Failed == 1 })
	if tg.count() != 3 {
		t.Fatalf("%d attempts", tg.count())
	}
}

func TestRetryAfterHeaderIsHonored(t *testing.T) {
	tg := newTarget(t)
	tg.statuses = []int{429}
	tg.header.Set("Retry-After", "30")
	e, clk := liveRig(t, Config{})
	h := mustHook(t, tg.srv.URL+"/hook", "", "json")
	_ = e.SetWebhooks([]Webhook{h})
	e.Observe([]Session{needsInput("s1")})
	clk.Advance(time.Second)
	if d := waitSleeping(t, clk); d != 30*time.Second {
		t.Fatalf("waited %v, want the server's 30s", d)
	}
}

func TestCloseStopsAndWaitsAndIsSafeTwice(t *testing.T) {
	tg := newTarget(t)
	tg.hang = make(chan struct{})
	defer close(tg.hang)
	e, clk := liveRig(t, Config{})
	hangs := mustHook(t, tg.srv.URL+"/hang", "", "json")
	_ = e.SetWebhooks([]Webhook{hangs})
	e.Observe([]Session{needsInput("s1"), needsInput("s2")})
	clk.Advance(time.Second)
	eventually(t, "a request in flight", func() bool { return tg.count() == 1 })
	e.Observe([]Session{needsInput("s1"), needsInput("s2"), needsInput("s3")}) // a debounce pending

	done := make(chan error, 1)
	go func() { done <- e.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return with a request in flight")
	}
	if err := e.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := e.SetWebhooks(nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("SetWebhooks after Close: %v", err)
	}
	e.Observe([]Session{needsInput("s4")})
	clk.Advance(time.Hour)
	if len(clk.pending()) != 0 {
		t.Fatalf("timers after Close: %v", clk.pending())
	}
}

func TestRemovedWebhookStopsItsWorker(t *testing.T) {
	tg := newTarget(t)
	e, clk := liveRig(t, Config{})
	a := mustHook(t, tg.srv.URL+"/a", "", "json")
	b := mustHook(t, tg.srv.URL+"/b", "", "json")
	_ = e.SetWebhooks([]Webhook{a, b})
	b2 := mustHook(t, tg.srv.URL+"/b", "done", "json")
	if err := e.SetWebhooks([]Webhook{b2, {URL: "ftp://bad", Format: FormatJSON}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("an invalid webhook was not reported: %v", err)
	}
	st := e.Stats().Webhooks
	if len(st) != 1 || st[0].ID != b.ID || !slices.Equal(st[0].On, []Kind{KindDone}) {
		t.Fatalf("stats %+v", st)
	}
	s := view("s1")
	s.TaskState = "done"
	e.Observe([]Session{s})
	clk.Advance(time.Second)
	eventually(t, "delivery to b", func() bool { return stat(t, e, b.ID).Sent == 1 })
	for _, r := range tg.requests() {
		if r.path != "/b" {
			t.Fatalf("removed webhook got %s", r.path)
		}
	}
}

func TestSendErrorDoesNotRevealWebhookURL(t *testing.T) {
	tg := newTarget(t)
	url := tg.srv.URL + "/services/T0/B0/secret-token"
	tg.srv.Close() // connection refused from now on
	err := NewHTTPSender(time.Second, true).Send(t.Context(), Request{URL: url, Body: []byte("{}")})
	if !errors.Is(err, ErrSend) {
		t.Fatalf("err %v", err)
	}
	if strings.Contains(err.Error(), "secret-token") || !strings.Contains(err.Error(), "127.0.0.1") {
		t.Fatalf("error %q reveals the path or hides the host", err)
	}
}
