package board

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/harn-dev/harn/util/clock"
)

// coalescer spaces pushes at least gap apart: a change arriving sooner is
// held and sent once when the gap has passed, however many arrived.
type coalescer struct {
	gap     time.Duration
	last    time.Time // when the last push went out
	pending bool
}

// change records a change at now. It returns send (push now), or a wait
// after which flush must be called (zero when a flush is already due).
func (c *coalescer) change(now time.Time) (send bool, wait time.Duration) {
	if c.pending {
		return false, 0
	}
	if c.last.IsZero() || now.Sub(c.last) >= c.gap {
		c.last = now
		return true, 0
	}
	c.pending = true
	return false, c.gap - now.Sub(c.last)
}

// flush sends the held change, if any, at now.
func (c *coalescer) flush(now time.Time) bool {
	if !c.pending {
		return false
	}
	c.pending = false
	c.last = now
	return true
}

// clientOf is the key of a client for the per-client stream cap: its
// remote address without the port.
func clientOf(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

// acquireStream takes a stream slot for client, or says which cap is
// full.
func (s *Server) acquireStream(client string) (release func(), full string) {
	s.smu.Lock()
	defer s.smu.Unlock()
	lim := s.cfg.Limits
	switch {
	case s.streams >= lim.MaxStreams:
		return nil, "the board holds its " + strconv.Itoa(lim.MaxStreams) + " event streams"
	case s.perClient[client] >= lim.MaxClientStreams:
		return nil, "this client holds its " + strconv.Itoa(lim.MaxClientStreams) + " event streams"
	}
	s.streams++
	s.perClient[client]++
	return func() {
		s.smu.Lock()
		defer s.smu.Unlock()
		s.streams--
		if s.perClient[client]--; s.perClient[client] <= 0 {
			delete(s.perClient, client)
		}
	}, ""
}

// Streams is the number of open event streams.
func (s *Server) Streams() int {
	s.smu.Lock()
	defer s.smu.Unlock()
	return s.streams
}

// events is GET /events: a server-sent event stream with one "change"
// event per (coalesced) change of the source, and a comment every Ping.
// It ends when the client goes, the source ends the subscription, or the
// board closes. A stream over the board's or the client's cap gets 429.
// The server's read and write timeouts do not end a stream: it clears the
// read deadline (the request has no body) and gives each write its own
// deadline, so a client that stops reading is dropped.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "board: streaming unsupported", http.StatusInternalServerError)
		return
	}
	release, full := s.acquireStream(clientOf(r))
	if release == nil {
		w.Header().Set("Retry-After", "5")
		http.Error(w, "board: too many event streams: "+full+"; close another tab of the board", http.StatusTooManyRequests)
		return
	}
	defer release()
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{}) // not supported by a test recorder: nothing to clear there
	writeTimeout := s.cfg.Limits.WriteTimeout
	deadline := func() { _ = rc.SetWriteDeadline(time.Now().Add(writeTimeout)) } //clock:real a socket's deadline is wall time
	ch, stop := s.cfg.Source.Changes()
	defer stop()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	deadline()
	w.WriteHeader(http.StatusOK)
	// retry: the browser's reconnect delay; hello: the page refetches on
	// every (re)connect, so nothing missed while away stays stale.
	if _, err := fmt.Fprint(w, "retry: 1000\nevent: hello\ndata: {}\n\n"); err != nil {
		return
	}
	fl.Flush()

	clk := s.cfg.Clock
	ping := clk.NewTicker(s.cfg.Ping)
	defer ping.Stop()
	c := coalescer{gap: s.cfg.MinInterval}
	var hold clock.Timer
	var holdC <-chan time.Time
	defer func() {
		if hold != nil {
			hold.Stop()
		}
	}()
	var seq uint64
	push := func() bool {
		deadline()
		seq++
		_, err := fmt.Fprintf(w, "id: %d\nevent: change\ndata: {\"seq\":%d}\n\n", seq, seq)
		fl.Flush()
		return err == nil
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
			return
		case _, ok := <-ch:
			if !ok {
				return
			}
			send, wait := c.change(clk.Now())
			if send && !push() {
				return
			}
			if wait > 0 {
				if hold == nil {
					hold = clk.NewTimer(wait)
				} else {
					hold.Reset(wait)
				}
				holdC = hold.C()
			}
		case <-holdC:
			holdC = nil
			if c.flush(clk.Now()) && !push() {
				return
			}
		case <-ping.C():
			deadline()
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return
			}
			fl.Flush()
		}
	}
}
