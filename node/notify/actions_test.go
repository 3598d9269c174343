package notify

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"
)

func approvalButtons() []Action {
	return []Action{
		{Label: "Approve", URL: "https://board.example/act", Method: "POST",
			Headers: map[string]string{"X-Harn-Action-Token": "hact_yes"}, Body: `{"request":"r-1","decision":"allow"}`},
		{Label: "Deny", URL: "https://board.example/act", Method: "POST",
			Headers: map[string]string{"X-Harn-Action-Token": "hact_no"}, Body: `{"request":"r-1","decision":"deny"}`},
	}
}

func permissionTransition() Transition {
	s := needsInput("s-42")
	s.Permission = &Permission{ID: "r-1", Tool: "Bash", Summary: "Bash: runs make …", Detail: "make deploy TOKEN=sekrit"}
	return Transition{Kind: KindNeedsInput, Session: s, Actions: approvalButtons()}
}

// The ntfy format carries the buttons as ntfy's JSON Actions header: two
// http actions that clear the notification; the other formats never carry
// them (their headers and bodies hold the tokens).
func TestNtfyCarriesTheButtonsAndNoOtherFormatDoes(t *testing.T) {
	tr := permissionTransition()
	req, err := Render(mustHook(t, "http://127.0.0.1:1/topic", "", "ntfy"), tr)
	if err != nil {
		t.Fatal(err)
	}
	h := req.Header.Get("Actions")
	var acts []map[string]any
	if !strings.HasPrefix(h, "[") || json.Unmarshal([]byte(h), &acts) != nil || len(acts) != 2 {
		t.Fatalf("Actions header %q", h)
	}
	a := acts[0]
	if a["action"] != "http" || a["label"] != "Approve" || a["url"] != "https://board.example/act" || a["method"] != "POST" ||
		a["clear"] != true || a["body"] != `{"request":"r-1","decision":"allow"}` ||
		a["headers"].(map[string]any)["X-Harn-Action-Token"] != "hact_yes" {
		t.Fatalf("the Approve action: %v", a)
	}
	if acts[1]["label"] != "Deny" {
		t.Fatalf("the Deny action: %v", acts[1])
	}
	for _, f := range []string{"json", "slack", "discord"} {
		r, err := Render(mustHook(t, "http://127.0.0.1:1/x", "", f), tr)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(r.Body), "hact_") || r.Header.Get("Actions") != "" {
			t.Fatalf("the %s format carries a button: %s", f, r.Body)
		}
	}
	// Another kind, or no buttons: no header.
	tr.Kind = KindBlocked
	if r, _ := Render(mustHook(t, "http://127.0.0.1:1/topic", "", "ntfy"), tr); r.Header.Get("Actions") != "" {
		t.Fatal("a blocked message carries buttons")
	}
	tr = permissionTransition()
	tr.Actions[0].Label, tr.Actions[1].Label = "Approve\u00e9", "Deny"
	if r, _ := Render(mustHook(t, "http://127.0.0.1:1/topic", "", "ntfy"), tr); r.Header.Get("Actions") != "" {
		t.Fatal("a header that is not ASCII was sent")
	}
}

// The engine asks for buttons once per needs_input message with an open
// request, and only when an ntfy webhook is told it.
func TestButtonsAreMadeOncePerMessageForNtfyOnly(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	mk := func(tr Transition) []Action {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if tr.Session.Permission == nil || tr.Session.Permission.ID != "r-1" {
			t.Errorf("buttons asked for %+v", tr.Session.Permission)
		}
		return approvalButtons()
	}
	clk, snd := newFakeClock(), &recSender{}
	e := New(Config{Logger: quiet(), Debounce: time.Second, Actions: mk}, clk, snd, nil)
	defer e.Close()
	jsonHook := mustHook(t, "http://127.0.0.1:1/json", "", "json")
	if err := e.SetWebhooks([]Webhook{jsonHook}); err != nil {
		t.Fatal(err)
	}
	s := permissionTransition().Session
	e.Observe([]Session{s})
	clk.Advance(time.Second)
	eventually(t, "the json message", func() bool { return snd.count() == 1 })
	mu.Lock()
	if calls != 0 {
		t.Fatalf("buttons made for a json webhook alone: %d", calls)
	}
	mu.Unlock()

	ntfy := mustHook(t, "http://127.0.0.1:1/topic", "needs_input", "ntfy")
	ntfy2 := mustHook(t, "http://127.0.0.1:1/topic2", "", "ntfy")
	if err := e.SetWebhooks([]Webhook{jsonHook, ntfy, ntfy2}); err != nil {
		t.Fatal(err)
	}
	s2 := s.fresh()
	s2.SessionId = "s-43"
	e.Observe([]Session{s, s2})
	clk.Advance(time.Second)
	eventually(t, "three more messages", func() bool { return snd.count() == 4 })
	mu.Lock()
	if calls != 1 {
		t.Fatalf("buttons made %d times for one message", calls)
	}
	mu.Unlock()
	with := 0
	for _, r := range snd.all() {
		if r.Header.Get("Actions") != "" {
			with++
		}
	}
	if with != 2 {
		t.Fatalf("%d messages carry buttons, want the two ntfy ones", with)
	}
}
