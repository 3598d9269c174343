package trust

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/harn-dev/harn/util/clock"
)

// Renewer keeps this node's certificate fresh: every Interval it checks the
// holder's certificate and, when two thirds of its life have passed (or the
// CA has rotated since it was issued), gets a new one through Renew, saves
// it and swaps it into the holder. New handshakes use it at once; open
// connections keep the old one until they close.
type Renewer struct {
	Holder *Holder
	// Renew gets a new certificate: SelfRenew on a server, RenewAt (a
	// server's address) on other nodes.
	Renew func(ctx context.Context) (*Bundle, error)
	// Save persists the new bundle before it is used; nil skips.
	Save func(*Bundle) error
	// Clock decides when a certificate is due and paces the checks; nil is
	// the wall clock.
	Clock clock.Clock
	// Interval is how often to check; 0 means one minute.
	Interval time.Duration
	// Timeout bounds one renewal; 0 means 30 s.
	Timeout time.Duration
	Log     *slog.Logger

	mu      sync.Mutex
	started bool
	closed  bool
	cancel  context.CancelFunc
	done    chan struct{}
}

func (r *Renewer) now() time.Time { return clock.Or(r.Clock).Now() }

// Due reports whether the holder's certificate should be renewed now.
func (r *Renewer) Due() bool {
	leaf := r.Holder.Leaf()
	if leaf == nil {
		return false // not joined: nothing to renew (a token is needed)
	}
	if NeedsRenewal(leaf, r.now()) {
		return true
	}
	// After a CA rotation, move onto the new CA before the old one goes.
	if cur := r.Holder.Roots().Certs(); len(cur) > 0 && leaf.CheckSignatureFrom(cur[0]) != nil {
		return true
	}
	return false
}

// Check renews once if due. renewed says whether the certificate changed.
func (r *Renewer) Check(ctx context.Context) (renewed bool, err error) {
	if !r.Due() {
		return false, nil
	}
	to := r.Timeout
	if to <= 0 {
		to = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, to)
	defer cancel()
	b, err := r.Renew(ctx)
	if err != nil {
		if leaf := r.Holder.Leaf(); leaf != nil && !r.now().Before(leaf.NotAfter) {
			return false, fmt.Errorf("trust: renew: the certificate expired %s; rejoin with a new token (harn token create): %w",
				leaf.NotAfter.UTC().Format(time.RFC3339), err)
		}
		return false, fmt.Errorf("trust: renew: %w", err)
	}
	if r.Save != nil {
		if err := r.Save(b); err != nil {
			return false, fmt.Errorf("trust: renew: save: %w", err)
		}
	}
	if b.Roots != nil {
		r.Holder.SetRoots(b.Roots)
	}
	r.Holder.SetCert(b.TLSCertificate())
	if r.Log != nil {
		r.Log.Info("trust: certificate renewed", "serial", SerialString(b.Cert), "not_after", b.Cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return true, nil
}

// Start runs the loop in one goroutine until Close. Calling it twice, or
// after Close, does nothing.
func (r *Renewer) Start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started || r.closed {
		return
	}
	r.started = true
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.done = make(chan struct{})
	every := r.Interval
	if every <= 0 {
		every = time.Minute
	}
	go func() {
		defer close(r.done)
		t := clock.Or(r.Clock).NewTicker(every)
		defer t.Stop()
		for {
			if _, err := r.Check(ctx); err != nil && ctx.Err() == nil && r.Log != nil {
				r.Log.Error("trust: certificate renewal failed; retrying", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C():
			}
		}
	}()
}

// Close stops the loop and waits for it (a renewal in flight is
// cancelled).
func (r *Renewer) Close() {
	r.mu.Lock()
	r.closed = true
	cancel, done := r.cancel, r.done
	r.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// SelfRenew is a server's Renew: a new key and a certificate for the same
// identity from its own CA.
func SelfRenew(a *Authority, h *Holder, ttl time.Duration) func(context.Context) (*Bundle, error) {
	return func(context.Context) (*Bundle, error) {
		id, err := h.Identity()
		if err != nil {
			return nil, err
		}
		key, err := NewKey()
		if err != nil {
			return nil, fmt.Errorf("trust: key: %w", err)
		}
		cert, err := a.CA().Issue(key.Public(), id.Name, id.Role, ttl, a.clk.Now())
		if err != nil {
			return nil, err
		}
		return &Bundle{Identity: Identity{Name: id.Name, Role: id.Role, Serial: SerialString(cert)}, Cert: cert, Key: key, Roots: a.Roots()}, nil
	}
}
