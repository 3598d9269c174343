package node

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/text"
)

// peerContext renders the prompt-time table of the other live sessions for
// session, or "" when the table has not changed since this session's last
// injection (or there are no peers and never were). The hash covers the
// table's content but not the ages, so time passing is not a change.
func (n *Node) peerContext(session string) string {
	now := n.cfg.Clock.Now()
	var peers []presence.State
	for _, s := range n.Sessions(false) {
		if s.SessionID == session || s.ParentSessionID == session {
			continue
		}
		peers = append(peers, s)
	}
	sort.Slice(peers, func(i, j int) bool {
		if peers[i].Name != peers[j].Name {
			return peers[i].Name < peers[j].Name
		}
		return peers[i].SessionID < peers[j].SessionID
	})
	h := sha256.New()
	for _, p := range peers {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%s\x00%s\x00%s\x00%s\n", p.SessionID, p.Name, p.Agent,
			p.Task, p.Activity, p.TaskState, p.BlockerReason, strings.Join(p.Claims, "\x01"))
	}
	sum := hex.EncodeToString(h.Sum(nil)[:16])
	key := "ctx/" + session
	prev, err := n.ledger.GetMeta(key)
	if err != nil {
		n.log.Error("peer context", "err", err)
	}
	if string(prev) == sum {
		return ""
	}
	if err := n.ledger.PutMeta(key, []byte(sum)); err != nil {
		n.log.Error("peer context", "err", err)
	}
	if len(peers) == 0 {
		if prev == nil {
			return ""
		}
		return "harn: no other agent sessions are live now."
	}
	return renderPeers(peers, now)
}

func renderPeers(peers []presence.State, now time.Time) string {
	var b strings.Builder
	b.WriteString("harn: other live agent sessions (coordinate before touching their claimed files)\n")
	b.WriteString("| session | agent | task | activity | lifecycle | age | claims |\n|---|---|---|---|---|---|---|\n")
	for _, p := range peers {
		life := string(p.TaskState)
		if p.BlockerReason != "" {
			life += ": " + text.Clip(p.BlockerReason, 80)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n",
			text.Cell("Agent "+p.Name), text.Cell(p.Agent), text.Cell(text.Clip(p.Task, 80)), p.Activity, text.Cell(life),
			text.Age(now, p.StartedAt), text.Cell(claimSummary(p.Claims)))
	}
	return b.String()
}

func claimSummary(cs []string) string {
	if len(cs) == 0 {
		return "-"
	}
	var parts []string
	for i, c := range cs {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("+%d more", len(cs)-3))
			break
		}
		parts = append(parts, filepath.Base(c))
	}
	return strings.Join(parts, ", ")
}

// Age renders the time since t compactly (45s, 12m, 3h, 2d).
//
// Deprecated: use text.Age.
func Age(now, t time.Time) string { return text.Age(now, t) }
