package gossip

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/util/text"
)

// Bounds of a gossiped hosted view: its peek is what a reader sees of a
// hosted terminal's question without attaching.
const (
	hostedPath  = 160
	hostedPeek  = 6
	hostedPeekC = 120
)

// BoundedHosted is a hosted view bounded to travel in a gossip entry.
func BoundedHosted(v *api.HostedView) *api.HostedView {
	if v == nil {
		return nil
	}
	out := &api.HostedView{Worktree: text.Clip(v.Worktree, hostedPath), Branch: text.Clip(v.Branch, whereChars),
		LaunchedAs: text.Clip(v.LaunchedAs, 40), Attached: v.Attached, Queued: v.Queued}
	peek := v.Peek
	if len(peek) > hostedPeek {
		peek = peek[len(peek)-hostedPeek:]
	}
	for _, l := range peek {
		out.Peek = append(out.Peek, text.Clip(text.OneLine(l), hostedPeekC))
	}
	return out
}

// WithHosted returns hash combined with the hosted view's, so that a new
// peek alone is a change of the gossiped entry.
func WithHosted(hash string, v *api.HostedView) string {
	if v == nil {
		return hash
	}
	h := sha256.New()
	for _, s := range append([]string{v.Worktree, v.Branch, strconv.Itoa(int(v.Queued))}, v.Peek...) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hash + "+h" + hex.EncodeToString(h.Sum(nil)[:6])
}
