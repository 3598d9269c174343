package node

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/harn-dev/harn/node/acttoken"
	"github.com/harn-dev/harn/node/alerts/notifysvc"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/board"
	"github.com/harn-dev/harn/node/notify"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/presence"
)

func needsInputWith(id string) notify.Transition {
	return notify.Transition{Kind: notify.KindNeedsInput,
		Session: notify.Session{SessionRow: &api.SessionRow{SessionId: "p1", Activity: string(presence.ActivityNeedsInput)}, Permission: &notify.Permission{ID: id, Tool: "Bash"}}}
}

// Without a board a needs_input message gets no buttons: there is nowhere
// for them to post.
func TestWithoutABoardANeedsInputMessageHasNoButtons(t *testing.T) {
	n := webNode(t, "", "")
	mustIngest(t, n, ev("p1", "1", presence.TypeSessionStart, 1, nil))
	id, _ := awaitOpen(t, n, tasks.Request{Session: "p1", Agent: "claude-code", Tool: "Bash", Key: "k1"})
	if b := n.notes.Buttons(needsInputWith(id)); b != nil {
		t.Fatalf("buttons without a board: %+v", b)
	}
}

// With a board, the buttons post their own tokens to the board's /act;
// the Approve token answers the request as `harn agents approve` does, by
// ntfy-action@NODE, once; the Deny token then finds its request closed.
// A request that is not open gets no buttons.
func TestButtonsAnswerTheRequestOnceByTheirUse(t *testing.T) {
	n := webNode(t, "127.0.0.1:0", "")
	mustIngest(t, n,
		ev("p1", "1", presence.TypeSessionStart, 1, nil),
		ev("p1", "2", presence.TypeInputRequested, 2, map[string]any{presence.AttrTool: "Bash", presence.AttrRequestKey: "k1"}))
	if b := n.notes.Buttons(needsInputWith("r-not-open")); b != nil {
		t.Fatalf("buttons for a request that is not open: %+v", b)
	}
	id, got := awaitOpen(t, n, tasks.Request{Session: "p1", Agent: "claude-code", Tool: "Bash", Key: "k1"})
	bs := n.notes.Buttons(needsInputWith(id))
	if len(bs) != 2 || bs[0].Label != "Approve" || bs[1].Label != "Deny" ||
		bs[0].URL != strings.TrimSuffix(n.web.BaseURL(), "/")+board.ActPath {
		t.Fatalf("buttons %+v", bs)
	}
	var body board.ActBody
	if err := json.Unmarshal([]byte(bs[0].Body), &body); err != nil || body.Request != id || body.Decision != "allow" {
		t.Fatalf("the Approve body %q", bs[0].Body)
	}
	yes, no := bs[0].Headers[board.ActTokenHeader], bs[1].Headers[board.ActTokenHeader]
	d := n.notes.Decider()
	if _, err := d.Decide(t.Context(), yes, id, acttoken.Deny); !errors.Is(err, acttoken.ErrOtherDecision) {
		t.Fatalf("the Approve token to deny: %v", err)
	}
	msg, err := d.Decide(t.Context(), yes, id, acttoken.Allow)
	if err != nil || !strings.Contains(msg, "approved "+id) {
		t.Fatalf("Approve: %q %v", msg, err)
	}
	if !<-got {
		t.Fatal("the hook did not get the allow")
	}
	if _, err := d.Decide(t.Context(), yes, id, acttoken.Allow); !errors.Is(err, acttoken.ErrSpent) {
		t.Fatalf("a replay: %v", err)
	}
	if _, err := d.Decide(t.Context(), no, id, acttoken.Deny); !errors.Is(err, acttoken.ErrClosed) {
		t.Fatalf("Deny after the answer: %v", err)
	}
	_, evs, _, err := n.roster.ReadTrace(t.Context(), "p1")
	if err != nil {
		t.Fatal(err)
	}
	var by []any
	for _, e := range evs {
		if e.Type == presence.TypeInputResolved {
			var attrs map[string]any
			if err := json.Unmarshal(e.AttrsJson, &attrs); err != nil {
				t.Fatal(err)
			}
			by = append(by, attrs[presence.AttrBy])
		}
	}
	if len(by) != 1 || by[0] != notifysvc.ActionBy+"@testnode" {
		t.Fatalf("recorded answers by %v", by)
	}
}

// With --http-public-url the links and the buttons use it, not the
// listen address; a URL with a user, a query or another scheme is
// refused.
func TestThePublicBoardURLIsWhereLinksAndButtonsPoint(t *testing.T) {
	for in, want := range map[string]string{"https://harn.example": "https://harn.example/",
		"https://harn.example/boards/a/": "https://harn.example/boards/a/", "http://10.0.0.5:7713": "http://10.0.0.5:7713/"} {
		if got, err := ParsePublicURL(in); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "harn.example", "ftp://harn.example/", "https://u:p@harn.example/", "https://harn.example/?token=x",
		"https://harn.example/#x", "https:///nohost", "https://harn.example/a b"} {
		if _, err := ParsePublicURL(bad); !errors.Is(err, ErrPublicURL) {
			t.Errorf("%q: %v, want ErrPublicURL", bad, err)
		}
	}
	cfg := testConfig(t, t.TempDir())
	cfg.HTTPAddr, cfg.Web.PublicURL = "127.0.0.1:0", "https://harn.example/b/"
	n := openNode(t, cfg)
	mustIngest(t, n, ev("p1", "1", presence.TypeSessionStart, 1, nil))
	if l := n.notes.Link("p1"); l != "https://harn.example/b/s/p1" {
		t.Fatalf("the link %q", l)
	}
	id, _ := awaitOpen(t, n, tasks.Request{Session: "p1", Agent: "claude-code", Tool: "Bash", Key: "k1"})
	if bs := n.notes.Buttons(needsInputWith(id)); len(bs) != 2 || bs[0].URL != "https://harn.example/b/act" {
		t.Fatalf("buttons %+v", bs)
	}
}
