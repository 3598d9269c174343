package gossip

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/harn-dev/harn/util/text"
)

// HarnTask is the compact view of a session's harn task that travels with
// its entry (`harn_task` in the roster): small and bounded, so that an
// entry with it still fits one gossip frame.
type HarnTask struct {
	ID           string   `json:"id"`
	State        string   `json:"state"`
	Status       string   `json:"status,omitempty"`
	Text         string   `json:"text,omitempty"`
	QueueDepth   int      `json:"queue_depth"`
	PendingCalls []string `json:"pending_calls,omitempty"`
}

// Bounds of a gossiped task view.
const (
	harnTaskText  = 80
	harnTaskCalls = 4
	harnTaskID    = 64
)

// Bounded returns t clipped to the gossip bounds.
func (t HarnTask) Bounded() HarnTask {
	t.ID = text.Clip(t.ID, harnTaskID)
	t.State, t.Status = text.Clip(t.State, 16), text.Clip(t.Status, 16)
	t.Text = text.Clip(t.Text, harnTaskText)
	if len(t.PendingCalls) > harnTaskCalls {
		t.PendingCalls = t.PendingCalls[:harnTaskCalls]
	}
	calls := make([]string, len(t.PendingCalls))
	for i, c := range t.PendingCalls {
		calls[i] = text.Clip(c, harnTaskID)
	}
	if len(calls) == 0 {
		calls = nil
	}
	t.PendingCalls = calls
	return t
}

// WithTask returns hash combined with the task view's, so that a change
// of the task alone is a change of the gossiped entry (its delta is sent
// and the digest tells a peer that missed it).
func WithTask(hash string, t *HarnTask) string {
	if t == nil {
		return hash
	}
	h := sha256.New()
	for _, s := range []string{t.ID, t.State, t.Status, strconv.Itoa(t.QueueDepth), strconv.Itoa(len(t.PendingCalls))} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hash + "+" + hex.EncodeToString(h.Sum(nil)[:6])
}

// decorator adds to an entry what the publisher's owner knows beyond the
// presence state (the harn task).
type decorator struct{ f func(*Entry) }

// SetDecorate makes Publish pass every entry through f before it is
// hashed for deduplication and sent; f must not block.
func (p *Publisher) SetDecorate(f func(*Entry)) { p.decorate.Store(&decorator{f: f}) }

func (p *Publisher) decorateEntry(e *Entry) {
	if d := p.decorate.Load(); d != nil && d.f != nil {
		d.f(e)
	}
}
