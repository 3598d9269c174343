package notify

import (
	"encoding/json"
	"mime"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/presence"
)

func blockedTransition() Transition {
	s := view("s-42")
	s.Activity, s.TaskState, s.BlockerReason = string(presence.ActivityIdle), string(presence.TaskBlocked), "waiting for repository access"
	return Transition{Kind: KindBlocked, Session: s, At: time.Date(2026, 8, 12, 10, 2, 0, 0, time.UTC)}
}

func TestJSONFormatFollowsSchemaV1(t *testing.T) {
	req, err := Render(mustHook(t, "http://127.0.0.1:1/x", "", "json"), blockedTransition())
	if err != nil {
		t.Fatal(err)
	}
	if req.ContentType != "application/json" {
		t.Fatalf("content type %q", req.ContentType)
	}
	want := `{"schema":"harn.notify/v1","kind":"blocked","at":"2026-08-12T10:02:00.000Z",` +
		`"title":"harn: Sable is blocked",` +
		`"text":"Sable (claude-code on buildbox) is blocked: waiting for repository access. Task: fix the tests",` +
		`"session":{"id":"s-42","name":"Sable","agent":"claude-code","node":"buildbox","task":"fix the tests",` +
		`"activity":"idle","task_state":"blocked","reason":"waiting for repository access","reachable":true}}`
	if string(req.Body) != want {
		t.Fatalf("body\n%s\nwant\n%s", req.Body, want)
	}
}

func TestSlackFormatIsTextObject(t *testing.T) {
	tr := blockedTransition()
	tr.Session.BlockerReason = "<!channel> & <@U123>"
	req, err := Render(mustHook(t, "http://127.0.0.1:1/x", "", "slack"), tr)
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]string
	if err := json.Unmarshal(req.Body, &body); err != nil || len(body) != 1 {
		t.Fatalf("body %s: %v", req.Body, err)
	}
	if !strings.Contains(body["text"], "&lt;!channel&gt; &amp; &lt;@U123&gt;") {
		t.Fatalf("agent text not escaped for Slack: %q", body["text"])
	}
}

func TestDiscordFormatIsContentObjectWithoutMentions(t *testing.T) {
	tr := blockedTransition()
	tr.Session.BlockerReason = "@everyone look"
	req, err := Render(mustHook(t, "http://127.0.0.1:1/x", "", "discord"), tr)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Content         string `json:"content"`
		AllowedMentions struct {
			Parse []string `json:"parse"`
		} `json:"allowed_mentions"`
	}
	if err := json.Unmarshal(req.Body, &body); err != nil {
		t.Fatal(err)
	}
	if body.Content != Text(tr) || body.AllowedMentions.Parse == nil || len(body.AllowedMentions.Parse) != 0 {
		t.Fatalf("body %s", req.Body)
	}
	if !strings.Contains(string(req.Body), `"allowed_mentions":{"parse":[]}`) {
		t.Fatalf("mentions are not disabled: %s", req.Body)
	}
}

func TestNtfyFormatPostsBodyWithTitlePriorityTags(t *testing.T) {
	tr := blockedTransition()
	req, err := Render(mustHook(t, "http://127.0.0.1:1/topic", "", "ntfy"), tr)
	if err != nil {
		t.Fatal(err)
	}
	if string(req.Body) != Text(tr) || !strings.HasPrefix(req.ContentType, "text/plain") {
		t.Fatalf("body %q type %q", req.Body, req.ContentType)
	}
	if req.Header.Get("Title") != "harn: Sable is blocked" || req.Header.Get("Priority") != "4" || req.Header.Get("Tags") != "warning,harn" {
		t.Fatalf("headers %v", req.Header)
	}
	tr.Kind = KindDone
	req, _ = Render(mustHook(t, "http://127.0.0.1:1/topic", "", "ntfy"), tr)
	if req.Header.Get("Priority") != "3" || req.Header.Get("Tags") != "white_check_mark,harn" {
		t.Fatalf("done headers %v", req.Header)
	}
	// A title that is not ASCII goes as an RFC 2047 word, which ntfy reads.
	tr.Session.Name = "Æsir"
	req, _ = Render(mustHook(t, "http://127.0.0.1:1/topic", "", "ntfy"), tr)
	raw := req.Header.Get("Title")
	dec, err := new(mime.WordDecoder).DecodeHeader(raw)
	if err != nil || dec != "harn: Æsir is done" || !isASCII(raw) {
		t.Fatalf("title %q decodes to %q (%v)", raw, dec, err)
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// hasControl reports a control character (or a line or bidi separator).
func hasControl(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) || r == 0x2028 || r == 0x2029 || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			return true
		}
	}
	return false
}

// checkNoControl renders t in every format and fails on a control
// character in any header or in any string the body carries.
func checkNoControl(t *testing.T, tr Transition) {
	t.Helper()
	for _, f := range Formats {
		req, err := Render(Webhook{URL: "http://127.0.0.1:1/x", Format: f}, tr)
		if err != nil {
			t.Fatal(err)
		}
		for k, vs := range req.Header {
			for _, v := range vs {
				if hasControl(v) || !isASCII(v) {
					t.Fatalf("%s: header %s %q", f, k, v)
				}
			}
		}
		if f == FormatNtfy {
			if hasControl(string(req.Body)) {
				t.Fatalf("ntfy body %q", req.Body)
			}
			continue
		}
		var v any
		if err := json.Unmarshal(req.Body, &v); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		walkStrings(v, func(s string) {
			if hasControl(s) {
				t.Fatalf("%s: payload string %q", f, s)
			}
		})
	}
	if hasControl(Title(tr)) || hasControl(Text(tr)) {
		t.Fatal("title or text")
	}
}

func walkStrings(v any, f func(string)) {
	switch x := v.(type) {
	case string:
		f(x)
	case map[string]any:
		for k, e := range x {
			f(k)
			walkStrings(e, f)
		}
	case []any:
		for _, e := range x {
			walkStrings(e, f)
		}
	}
}

func TestNoControlCharactersInAnyPayload(t *testing.T) {
	nasty := "a\x1b]0;pwned\x07b\r\nc\u202ed\u2028e\x00f\x9bg\xff"
	s := Session{SessionRow: &api.SessionRow{SessionId: nasty, Name: nasty, Agent: nasty, Node: nasty, Task: nasty,
		Activity: nasty, TaskState: nasty, BlockerReason: nasty, WaitingOn: nasty}}
	for _, k := range append(Kinds, Kind(nasty)) {
		checkNoControl(t, Transition{Kind: k, Session: s})
	}
}

func FuzzRenderHasNoControlCharacters(f *testing.F) {
	f.Add("Sable", "fix\x1b[2J", "reason\n", "Bash\r", "claude-code", "needs_input")
	f.Add("\u202e", "\x00", "\xff\xfe", "\u2028", "\x9b", "blocked")
	f.Fuzz(func(t *testing.T, name, task, reason, waiting, agent, kind string) {
		s := Session{SessionRow: &api.SessionRow{SessionId: name + "-id", Name: name, Agent: agent, Node: agent, Task: task,
			Activity: kind, TaskState: kind, BlockerReason: reason, WaitingOn: waiting}}
		checkNoControl(t, Transition{Kind: Kind(kind), Session: s})
		if n := len([]rune(Text(Transition{Kind: Kind(kind), Session: s}))); n > MaxText {
			t.Fatalf("text of %d runes", n)
		}
	})
}
