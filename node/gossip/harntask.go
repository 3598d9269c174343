package gossip

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/util/text"
)

// Bounds of a gossiped task view.
const (
	harnTaskText  = 80
	harnTaskCalls = 4
	harnTaskID    = 64
)

// BoundedTask returns t clipped to the gossip bounds (nil for nil).
func BoundedTask(t *api.HarnTask) *api.HarnTask {
	if t == nil {
		return nil
	}
	out := &api.HarnTask{Id: text.Clip(t.Id, harnTaskID), State: text.Clip(t.State, 16),
		Status: text.Clip(t.Status, 16), Text: text.Clip(t.Text, harnTaskText), QueueDepth: t.QueueDepth}
	calls := t.PendingCalls
	if len(calls) > harnTaskCalls {
		calls = calls[:harnTaskCalls]
	}
	for _, c := range calls {
		out.PendingCalls = append(out.PendingCalls, text.Clip(c, harnTaskID))
	}
	return out
}

// WithTask returns hash combined with the task view's, so that a change
// of the task alone is a change of the gossiped entry (its delta is sent
// and the digest tells a peer that missed it).
func WithTask(hash string, t *api.HarnTask) string {
	if t == nil {
		return hash
	}
	h := sha256.New()
	for _, s := range []string{t.Id, t.State, t.Status, strconv.Itoa(int(t.QueueDepth)), strconv.Itoa(len(t.PendingCalls))} {
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
