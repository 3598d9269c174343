package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Request is one rendered message for one webhook: always a POST.
type Request struct {
	URL         string
	ContentType string
	// Header holds extra headers (ntfy's Title, Priority, Tags).
	Header http.Header
	Body   []byte
}

// Sender delivers one request. It returns nil when the target accepted it
// (a 2xx answer), and otherwise an error; a *StatusError when the target
// answered.
type Sender interface {
	Send(ctx context.Context, r Request) error
}

// ErrSend is the sentinel under every delivery failure.
var ErrSend = errors.New("notify: delivery failed")

// StatusError is a non-2xx answer from a webhook target.
type StatusError struct {
	Code int
	// RetryAfter is the target's Retry-After, when it gave seconds.
	RetryAfter time.Duration
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("notify: webhook answered %d %s", e.Code, http.StatusText(e.Code))
}

// Unwrap makes a StatusError match ErrSend.
func (e *StatusError) Unwrap() error { return ErrSend }

// Permanent reports whether retrying cannot help: a 3xx answer (redirects
// are not followed, so the same answer would come again), or a 4xx answer
// other than 408 (timeout), 425 (too early) and 429 (too many requests).
func (e *StatusError) Permanent() bool {
	if e.Code >= 300 && e.Code < 400 {
		return true
	}
	switch e.Code {
	case http.StatusRequestTimeout, http.StatusTooEarly, http.StatusTooManyRequests:
		return false
	}
	return e.Code >= 400 && e.Code < 500
}

// DefaultSendTimeout bounds one HTTP attempt.
const DefaultSendTimeout = 10 * time.Second

// maxAnswer is how much of an answer's body is read (and discarded) so that
// the connection can be reused.
const maxAnswer = 64 << 10

// HTTPSender is the real Sender: net/http with a bounded timeout per
// attempt, answers read to a bounded size, no redirects followed (a 3xx
// answer is a failed delivery: a redirect would carry the message, and the
// secret URL in a Referer, to an address nobody configured), no proxy, and
// every connection's address checked (see CheckTarget).
type HTTPSender struct {
	client *http.Client
}

// NewHTTPSender returns a sender whose attempts each last at most timeout
// (DefaultSendTimeout when zero). Unless allowPrivate, it refuses to
// connect to loopback, link-local, private, unspecified and multicast
// addresses, checked on the address dialed, after DNS.
func NewHTTPSender(timeout time.Duration, allowPrivate bool) *HTTPSender {
	if timeout <= 0 {
		timeout = DefaultSendTimeout
	}
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: dialControl(allowPrivate)}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   timeout,
		ExpectContinueTimeout: time.Second,
	}
	return &HTTPSender{client: &http.Client{
		Timeout:   timeout,
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}}
}

// Send posts r.
func (s *HTTPSender) Send(ctx context.Context, r Request) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		return fmt.Errorf("%w: cannot post to %s", ErrSend, redactURL(r.URL))
	}
	for k, vs := range r.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if r.ContentType != "" {
		req.Header.Set("Content-Type", r.ContentType)
	}
	req.Header.Set("User-Agent", "harn-notify/1")
	// The URL's path is often the secret (Slack, Discord, ntfy): no header
	// repeats it.
	req.Header.Del("Referer")
	resp, err := s.client.Do(req)
	if err != nil {
		var te *TargetError
		if errors.As(err, &te) {
			return fmt.Errorf("%w: %w", ErrSend, te)
		}
		// The URL of a webhook is its secret: errors name only its host.
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = redactURL(ue.URL)
		}
		return fmt.Errorf("%w: %w", ErrSend, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
	_ = resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	se := &StatusError{Code: resp.StatusCode}
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
		se.RetryAfter = time.Duration(min(secs, 3600)) * time.Second
	}
	return se
}
