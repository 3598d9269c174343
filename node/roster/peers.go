package roster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/text"
)

// PeerContext is the prompt-time context for session: a reminder of its
// re-minted name while the agent has not shown it, and the table of the
// other live sessions on every reachable node, when that table changed
// since this session's last injection ("" when there is nothing to say).
// The table is capped at Config.PeerContextBytes with the most relevant
// sessions first, then "and N more". Its change hash covers every row
// shown (remote ones too) and the count left out, but not the ages, so
// time passing is not a change.
func (ro *Roster) PeerContext(session string) string {
	now := ro.cfg.Clock.Now()
	ro.host.Settle(session) // the transcripts its events named, read
	self, _ := ro.resolveLocal(session)
	var remind string
	if self.NamePending() {
		remind = NameReminder(self.SuggestedSessionName)
	}
	rows, _, err := ro.List(context.Background(), false, false, true)
	if err != nil {
		ro.log.Error("peer context", "err", err)
	}
	peers := make([]peerRow, 0, len(rows))
	for i := range rows {
		r := rows[i].SessionRow
		if !r.GetReachable() || r.GetEnded() || r.GetSessionId() == session || r.GetParentSessionId() == session {
			continue
		}
		node := ""
		if r.GetSource() != "local" && r.GetNode() != ro.cfg.Name {
			node = r.GetNode()
		}
		st := r.State()
		peers = append(peers, peerRow{st: &st, node: node})
	}
	budget := ro.cfg.PeerContextBytes
	if remind != "" {
		budget -= len(remind) + 1
	}
	table, sum := renderPeerTable(self.Repo, peers, now, budget)
	key := "ctx/" + session
	led := ro.host.Ledger()
	prev, err := led.GetMeta(key)
	if err != nil {
		ro.log.Error("peer context", "err", err)
	}
	switch {
	case string(prev) == sum:
		table = ""
	case len(peers) == 0 && prev == nil:
		table = "" // never had peers: nothing to say, nothing to remember
	default:
		if err := led.PutMeta(key, []byte(sum)); err != nil {
			ro.log.Error("peer context", "err", err)
		}
		if len(peers) == 0 {
			table = "harn: no other agent sessions are live now."
		}
	}
	switch {
	case remind == "":
		return table
	case table == "":
		return remind
	}
	return remind + "\n" + table
}

// NameReminder is the prompt-time line that asks an agent to show its
// re-minted session name.
func NameReminder(name string) string {
	return "harn: show this session name: " + text.OneLine(text.Clip(name, presence.MaxShownNameBytes))
}

// peerRow is one other session in the peer table; node is set for a
// session of another node.
type peerRow struct {
	st   *presence.State
	node string
}

// peerRank orders peers by relevance: the same repository as the asking
// session first, then those that need input or are blocked, then the
// rest.
func peerRank(repo string, s *presence.State) int {
	r := 2
	if s.Activity == presence.ActivityNeedsInput || s.TaskState == presence.TaskBlocked {
		r = 1
	}
	if repo != "" && s.Repo == repo {
		r -= 2
	}
	return r
}

const peerHeader = "harn: other live agent sessions (coordinate before touching their claimed files)\n" +
	"| session | node | agent | project | task | activity | lifecycle | age | claims |\n" +
	"|---|---|---|---|---|---|---|---|---|\n"

// peerMoreReserve is room kept for the "and N more" line.
const peerMoreReserve = 96

// renderPeerTable renders the most relevant peers that fit in budget
// bytes, then "and N more", and the hash of what it shows without the
// ages. Peers are ordered by peerRank, then name and id.
func renderPeerTable(repo string, peers []peerRow, now time.Time, budget int) (string, string) {
	sort.Slice(peers, func(i, j int) bool {
		a, b := peers[i].st, peers[j].st
		if ra, rb := peerRank(repo, a), peerRank(repo, b); ra != rb {
			return ra < rb
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.SessionID < b.SessionID
	})
	h := sha256.New()
	var b strings.Builder
	b.WriteString(peerHeader)
	shown := 0
	for i := range peers {
		row, content := peerLine(&peers[i], now)
		last := i == len(peers)-1
		room := budget - b.Len() - len(row)
		if room < 0 || (!last && room < peerMoreReserve) {
			break
		}
		b.WriteString(row)
		hashLine(h, content)
		shown++
	}
	if more := len(peers) - shown; more > 0 {
		line := fmt.Sprintf("and %d more live sessions (`harn agents list` shows them all)\n", more)
		b.WriteString(line)
		hashLine(h, line)
	}
	return b.String(), hex.EncodeToString(h.Sum(nil)[:16])
}

// peerLine is a peer's table row, and its content without the age (what
// the change hash covers).
func peerLine(p *peerRow, now time.Time) (row, content string) {
	s := p.st
	life := string(s.TaskState)
	if s.BlockerReason != "" {
		life += ": " + text.Clip(s.BlockerReason, 80)
	}
	act := string(s.Activity)
	if s.WaitingOn != "" && s.Activity == presence.ActivityNeedsInput {
		act += " (" + s.WaitingOn + ")"
	}
	node := p.node
	if node == "" {
		node = "this"
	}
	project := s.Project()
	if s.Branch != "" {
		project += "@" + s.Branch
	}
	cells := []string{text.Cell("Agent " + s.Name), text.Cell(node), text.Cell(s.Agent), text.Cell(text.Clip(project, 40)),
		text.Cell(text.Clip(s.Task, 80)), text.Cell(act), text.Cell(life)}
	claims := text.Cell(claimSummary(s.Claims))
	content = strings.Join(cells, "\x00") + "\x00" + claims
	row = "| " + strings.Join(cells, " | ") + " | " + text.Age(now, s.StartedAt) + " | " + claims + " |\n"
	return row, content
}

func hashLine(h hash.Hash, s string) {
	h.Write([]byte(s))
	h.Write([]byte{'\n'})
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
