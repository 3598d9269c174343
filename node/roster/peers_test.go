package roster

import (
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/presence"
)

var t0 = time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC)

func peer(id, name, repo string, act presence.Activity, ts presence.TaskState) presence.State {
	s := presence.NewState(id)
	s.Name, s.Repo, s.Activity, s.TaskState, s.Agent = name, repo, act, ts, "claude-code"
	s.StartedAt = t0
	return s
}

// TestPeerContextMostRelevantFirst: the same repository first, then the
// sessions that need input or are blocked, then the rest; remote rows
// name their node.
func TestPeerContextMostRelevantFirst(t *testing.T) {
	quiet := peer("q", "Ash", "other", presence.ActivityWorking, presence.TaskActive)
	waits := peer("w", "Birch", "other", presence.ActivityNeedsInput, presence.TaskActive)
	blocked := peer("b", "Cedar", "", presence.ActivityIdle, presence.TaskBlocked)
	same := peer("s", "Zinc", "shop", presence.ActivityIdle, presence.TaskActive)
	sameWaits := peer("sw", "Yew", "shop", presence.ActivityNeedsInput, presence.TaskActive)
	cases := []struct {
		name  string
		repo  string
		peers []presence.State
		want  []string // names in order
	}{
		{"same repo first, waiting within it first", "shop", []presence.State{quiet, waits, blocked, same, sameWaits},
			[]string{"Yew", "Zinc", "Birch", "Cedar", "Ash"}},
		{"no repo: needs input and blocked first", "", []presence.State{quiet, same, waits, blocked},
			[]string{"Birch", "Cedar", "Ash", "Zinc"}},
		{"unknown repo matches nothing", "elsewhere", []presence.State{same, quiet},
			[]string{"Ash", "Zinc"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rows := make([]peerRow, len(c.peers))
			for i := range c.peers {
				rows[i] = peerRow{st: &c.peers[i]}
			}
			rows[0].node = "box2"
			out, _ := renderPeerTable(c.repo, rows, t0.Add(time.Hour), layout.DefaultPeerContextBytes)
			last := -1
			for _, name := range c.want {
				i := strings.Index(out, "| Agent "+name+" |")
				if i < 0 || i < last {
					t.Fatalf("order %v not kept in:\n%s", c.want, out)
				}
				last = i
			}
			if !strings.Contains(out, "| box2 |") {
				t.Fatalf("the remote row does not name its node:\n%s", out)
			}
		})
	}
}

// TestPeerContextHashIgnoresAges: time passing is not a change; a state
// change is.
func TestPeerContextHashIgnoresAges(t *testing.T) {
	a := peer("a", "Ash", "", presence.ActivityWorking, presence.TaskActive)
	rows := []peerRow{{st: &a, node: "box2"}}
	t1, h1 := renderPeerTable("", rows, t0.Add(time.Minute), layout.DefaultPeerContextBytes)
	t2, h2 := renderPeerTable("", rows, t0.Add(3*time.Hour), layout.DefaultPeerContextBytes)
	if t1 == t2 || h1 != h2 {
		t.Fatalf("ages changed the hash (%s vs %s) or not the text", h1, h2)
	}
	a.Activity = presence.ActivityNeedsInput
	if _, h3 := renderPeerTable("", rows, t0.Add(time.Minute), layout.DefaultPeerContextBytes); h3 == h1 {
		t.Fatal("a state change kept the hash")
	}
	rows[0].node = "box3"
	if _, h4 := renderPeerTable("", rows, t0.Add(time.Minute), layout.DefaultPeerContextBytes); h4 == h1 {
		t.Fatal("a move to another node kept the hash")
	}
}
