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
			life += ": " + clip(p.BlockerReason, 80)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n",
			cell("Agent "+p.Name), cell(p.Agent), cell(clip(p.Task, 80)), p.Activity, cell(life),
			Age(now, p.StartedAt), cell(claimSummary(p.Claims)))
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

func cell(s string) string {
	if s == "" {
		return "-"
	}
	return strings.NewReplacer("|", "/", "\n", " ").Replace(s)
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// Age renders the time since t compactly (45s, 12m, 3h, 2d).
func Age(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
