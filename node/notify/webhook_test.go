package notify

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestWebhookURLMustBeHTTPOrHTTPS(t *testing.T) {
	cases := []struct {
		url, problem string
	}{
		{"", "is empty"},
		{"ftp://example.com/x", "must be http or https"},
		{"example.com/hook", "must be http or https"},
		{"https:///nohost", "has no host"},
		{"http://user:pw@example.com/x", "carries a user or password"},
		{"http://exa mple.com", "contains spaces or control characters"},
		{"http://example.com/\x1b[31m", "contains spaces or control characters"},
		{"https://" + strings.Repeat("a", MaxURLLen), "is longer than"},
		{"http://[::1", "is not a URL"},
	}
	for _, c := range cases {
		_, err := NewWebhook(c.url, "", "")
		var fe *FieldError
		if !errors.As(err, &fe) || !errors.Is(err, ErrInvalid) {
			t.Fatalf("%q: err %v, want a FieldError", c.url, err)
		}
		msg := err.Error()
		if fe.Field != "url" || !strings.Contains(msg, c.problem) || fe.Fix == "" {
			t.Errorf("%q: %q, want field url and %q and a fix", c.url, msg, c.problem)
		}
		if strings.ContainsAny(msg, "\n\r\x1b") {
			t.Errorf("%q: error is not one clean line: %q", c.url, msg)
		}
		if strings.Contains(msg, "pw@") {
			t.Errorf("%q: error shows the password: %q", c.url, msg)
		}
	}
	for _, ok := range []string{"http://127.0.0.1:8080/x", "https://ntfy.example/topic", "https://hooks.slack.com/services/T/B/X?y=1"} {
		if _, err := NewWebhook(ok, "", ""); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}

func TestParseOnFilter(t *testing.T) {
	cases := []struct {
		in   string
		want []Kind
		bad  bool
	}{
		{"", nil, false},
		{"needs_input", []Kind{KindNeedsInput}, false},
		{"done, blocked,done", []Kind{KindBlocked, KindDone}, false},
		{"silent,unreachable,needs_input,blocked,done", Kinds, false},
		{" ,DONE, ", []Kind{KindDone}, false},
		{"needs-input", nil, true},
		{"idle", nil, true},
	}
	for _, c := range cases {
		got, err := ParseOn(c.in)
		if c.bad {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != "--on" || !strings.Contains(err.Error(), "needs_input, blocked, done, unreachable, silent") {
				t.Errorf("%q: err %v, want an --on error listing the kinds", c.in, err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%q: %v %v, want %v", c.in, got, err, c.want)
		}
	}
}

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]Format{"": FormatJSON, "json": FormatJSON, "Slack": FormatSlack, "discord": FormatDiscord, " ntfy ": FormatNtfy} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	_, err := ParseFormat("teams")
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "--format" || !strings.Contains(err.Error(), "json, slack, discord, ntfy") {
		t.Fatalf("err %v", err)
	}
}

func TestWebhookIDIsStableAndPerFormat(t *testing.T) {
	a := mustHook(t, "https://ntfy.example/t", "", "ntfy")
	b := mustHook(t, "https://ntfy.example/t", "done", "ntfy")
	c := mustHook(t, "https://ntfy.example/t", "", "json")
	if a.ID != b.ID || a.ID == c.ID || !strings.HasPrefix(a.ID, "wh-") || len(a.ID) != 11 {
		t.Fatalf("ids %s %s %s", a.ID, b.ID, c.ID)
	}
	a.ID = "wh-00000000"
	if err := a.Validate(); err == nil {
		t.Fatal("a forged id validated")
	}
}

func TestRedactedHidesPathAndQuery(t *testing.T) {
	cases := map[string]string{
		"https://hooks.slack.com/services/T0/B0/secret": "https://hooks.slack.com/…",
		"https://ntfy.example/mytopic":                  "https://ntfy.example/…",
		"http://127.0.0.1:9/":                           "http://127.0.0.1:9",
		"http://127.0.0.1:9?token=x":                    "http://127.0.0.1:9/…",
	}
	for in, want := range cases {
		if got := (Webhook{URL: in}).Redacted(); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}
