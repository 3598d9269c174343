package notify

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// factsTransition is a needs_input of a session whose harn task's shell
// call waits for its confirmation, with markup and escape sequences in
// its command.
func factsTransition() Transition {
	s := needsInput("s-42")
	s.Permission = &Permission{ID: "call-1", Kind: "confirmation", Tool: "shell", Summary: "shell: runs git …",
		Command: "echo '<script>x</script>' \x1b]0;pwned\x07\ngit push --force-with-lease origin main TOKEN=sekrit",
		Cwd:     "/home/me/harn", Path: "/home/me/harn/a.go", Diff: "--- a/a.go\n+++ b/a.go\n-x\n+y\x1b[2J",
		Opened: time.Date(2026, 8, 12, 10, 1, 0, 0, time.UTC)}
	return Transition{Kind: KindNeedsInput, Session: s, At: time.Date(2026, 8, 12, 10, 2, 0, 0, time.UTC)}
}

// TestJSONWebhookCarriesWhatTheCallAsks: the json format (a target the
// operator runs for harn) carries the call in full: its kind, the whole
// command with its lines, the cwd, the file and the diff, and since when
// it waits; control characters stripped, markup left as text for the
// receiver to escape.
func TestJSONWebhookCarriesWhatTheCallAsks(t *testing.T) {
	req, err := Render(mustHook(t, "http://127.0.0.1:1/x", "", "json"), factsTransition())
	if err != nil {
		t.Fatal(err)
	}
	var p Payload
	if err := json.Unmarshal(req.Body, &p); err != nil {
		t.Fatal(err)
	}
	r := p.Session.Request
	if r == nil || r.ID != "call-1" || r.Kind != "confirmation" || r.Tool != "shell" ||
		r.Command != "echo '<script>x</script>' ]0;pwned\ngit push --force-with-lease origin main TOKEN=sekrit" ||
		r.Cwd != "/home/me/harn" || r.Path != "/home/me/harn/a.go" || r.Diff != "--- a/a.go\n+++ b/a.go\n-x\n+y[2J" ||
		r.WaitingSince != "2026-08-12T10:01:00.000Z" {
		t.Fatalf("the request: %+v", r)
	}
	if !strings.Contains(p.Text, "shell: runs git … (confirmation of call call-1)") {
		t.Fatalf("the text: %q", p.Text)
	}
}

// TestThirdPartyFormatsGetTheSummaryOnly: slack, discord and ntfy (whose
// services keep messages) get the summary, never the command's
// arguments, the cwd, the file or the diff.
func TestThirdPartyFormatsGetTheSummaryOnly(t *testing.T) {
	for _, f := range []string{"slack", "discord", "ntfy"} {
		req, err := Render(mustHook(t, "http://127.0.0.1:1/x", "", f), factsTransition())
		if err != nil {
			t.Fatal(err)
		}
		body := string(req.Body)
		if !strings.Contains(body, "shell: runs git") {
			t.Fatalf("%s lacks the summary: %s", f, body)
		}
		for _, secret := range []string{"sekrit", "force-with-lease", "/home/me", "a.go", "+y", "<script>"} {
			if strings.Contains(body, secret) || strings.Contains(strings.Join(req.Header.Values("Title"), ""), secret) {
				t.Fatalf("%s carries %q: %s", f, secret, body)
			}
		}
	}
}

// TestJSONWebhookBoundsTheCommandAndDiff: a command over 4 KiB and a diff
// over 8 KiB are cut there, and the payload says so.
func TestJSONWebhookBoundsTheCommandAndDiff(t *testing.T) {
	tr := factsTransition()
	tr.Session.Permission.Command = strings.Repeat("c", maxCommand+1)
	tr.Session.Permission.Diff = strings.Repeat("d", maxDiff+1)
	req, _ := Render(mustHook(t, "http://127.0.0.1:1/x", "", "json"), tr)
	var p Payload
	_ = json.Unmarshal(req.Body, &p)
	if r := p.Session.Request; len(r.Command) != maxCommand || !r.CommandCut || len(r.Diff) != maxDiff || !r.DiffCut {
		t.Fatalf("command %d bytes cut %v, diff %d bytes cut %v", len(r.Command), r.CommandCut, len(r.Diff), r.DiffCut)
	}
	tr.Session.Permission.Command = strings.Repeat("c", maxCommand)
	req, _ = Render(mustHook(t, "http://127.0.0.1:1/x", "", "json"), tr)
	var p2 Payload
	_ = json.Unmarshal(req.Body, &p2)
	if r := p2.Session.Request; len(r.Command) != maxCommand || r.CommandCut {
		t.Fatalf("a command of the bound: %d bytes, cut %v", len(r.Command), r.CommandCut)
	}
}
