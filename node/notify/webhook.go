package notify

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/harn-dev/harn/util/text"
)

// Format is how a webhook's messages are shaped.
type Format string

// The formats.
const (
	// FormatJSON posts the documented JSON schema (see Payload).
	FormatJSON Format = "json"
	// FormatSlack posts {"text": ...} (Slack incoming webhooks).
	FormatSlack Format = "slack"
	// FormatDiscord posts {"content": ...} (Discord webhooks).
	FormatDiscord Format = "discord"
	// FormatNtfy posts the message as the body to an ntfy topic URL, with
	// Title, Priority and Tags headers.
	FormatNtfy Format = "ntfy"
)

// Formats lists the formats in the order help text shows them.
var Formats = []Format{FormatJSON, FormatSlack, FormatDiscord, FormatNtfy}

// Limits of a webhook configuration.
const (
	// MaxURLLen bounds a webhook URL.
	MaxURLLen = 2048
)

// ErrInvalid is the sentinel under every configuration error (a *FieldError).
var ErrInvalid = errors.New("notify: invalid webhook configuration")

// FieldError is a configuration error: the field that is wrong, what is
// wrong with it, and how to fix it. Its text is one line.
type FieldError struct {
	Field   string
	Value   string
	Problem string
	Fix     string
}

func (e *FieldError) Error() string {
	v := ""
	if e.Value != "" {
		v = fmt.Sprintf(" %q", text.Clip(text.OneLine(e.Value), 80))
	}
	return fmt.Sprintf("notify: %s%s %s; %s", e.Field, v, e.Problem, e.Fix)
}

// Unwrap makes every FieldError match ErrInvalid.
func (e *FieldError) Unwrap() error { return ErrInvalid }

// Webhook is one configured webhook. Configurations are mesh-wide: the node
// stores them in the registry (EncodeConfigs) and every node reads the same
// list.
type Webhook struct {
	// ID is the handle `notify remove` takes: "wh-" and 8 hex digits
	// derived from the URL and format (WebhookID).
	ID  string `json:"id"`
	URL string `json:"url"`
	// On lists the kinds this webhook is told; empty means every kind.
	On     []Kind `json:"on,omitempty"`
	Format Format `json:"format"`
}

// WebhookID is the stable handle of a webhook with this URL and format, so
// that adding the same webhook twice is seen as a duplicate.
func WebhookID(rawURL string, f Format) string {
	sum := sha256.Sum256([]byte(string(f) + "\n" + rawURL))
	return "wh-" + hex.EncodeToString(sum[:4])
}

// NewWebhook builds a webhook from the arguments of `notify add webhook URL
// [--on LIST] [--format F]`: on is the comma-separated --on value (empty
// for every kind) and format the --format value (empty for json).
func NewWebhook(rawURL, on, format string) (Webhook, error) {
	kinds, err := ParseOn(on)
	if err != nil {
		return Webhook{}, err
	}
	f, err := ParseFormat(format)
	if err != nil {
		return Webhook{}, err
	}
	w := Webhook{ID: WebhookID(rawURL, f), URL: rawURL, On: kinds, Format: f}
	return w, w.Validate()
}

// ParseOn parses an --on value: kind names separated by commas, blanks
// ignored, duplicates folded, returned in the order of Kinds. An empty
// value means every kind and returns nil.
func ParseOn(s string) ([]Kind, error) {
	seen := map[Kind]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k := Kind(strings.ToLower(part))
		if !slices.Contains(Kinds, k) {
			return nil, &FieldError{Field: "--on", Value: part, Problem: "is not a transition",
				Fix: "use a comma-separated list of " + kindList()}
		}
		seen[k] = true
	}
	var out []Kind
	for _, k := range Kinds {
		if seen[k] {
			out = append(out, k)
		}
	}
	return out, nil
}

// ParseFormat parses a --format value; empty means json.
func ParseFormat(s string) (Format, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return FormatJSON, nil
	}
	if f := Format(s); slices.Contains(Formats, f) {
		return f, nil
	}
	return "", &FieldError{Field: "--format", Value: s, Problem: "is not a format",
		Fix: "use one of json, slack, discord, ntfy"}
}

func kindList() string {
	names := make([]string, len(Kinds))
	for i, k := range Kinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// Validate checks a webhook: an absolute http or https URL with a host, no
// credentials in clear sight of `notify list` other than in the path or
// query, known kinds and a known format.
func (w Webhook) Validate() error {
	if w.URL == "" {
		return &FieldError{Field: "url", Problem: "is empty", Fix: "give the webhook's http:// or https:// address"}
	}
	if len(w.URL) > MaxURLLen {
		return &FieldError{Field: "url", Value: w.URL, Problem: fmt.Sprintf("is longer than %d bytes", MaxURLLen),
			Fix: "use a shorter address"}
	}
	if strings.ContainsFunc(w.URL, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return &FieldError{Field: "url", Value: w.URL, Problem: "contains spaces or control characters",
			Fix: "percent-encode them"}
	}
	u, err := url.Parse(w.URL)
	if err != nil {
		return &FieldError{Field: "url", Value: w.URL, Problem: "is not a URL", Fix: "give an address like https://ntfy.example/topic"}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return &FieldError{Field: "url", Value: w.URL, Problem: "must be http or https",
			Fix: "give an address like https://ntfy.example/topic"}
	}
	if u.Host == "" || u.Hostname() == "" {
		return &FieldError{Field: "url", Value: w.URL, Problem: "has no host", Fix: "give an address like https://ntfy.example/topic"}
	}
	if u.User != nil {
		return &FieldError{Field: "url", Value: w.Redacted(), Problem: "carries a user or password",
			Fix: "put the token in the path or query the service documents"}
	}
	if !slices.Contains(Formats, w.Format) {
		return &FieldError{Field: "format", Value: string(w.Format), Problem: "is not a format",
			Fix: "use one of json, slack, discord, ntfy"}
	}
	for _, k := range w.On {
		if !slices.Contains(Kinds, k) {
			return &FieldError{Field: "on", Value: string(k), Problem: "is not a transition", Fix: "use " + kindList()}
		}
	}
	if w.ID != WebhookID(w.URL, w.Format) {
		return &FieldError{Field: "id", Value: w.ID, Problem: "does not match the URL and format",
			Fix: "let harn derive it (notify.WebhookID)"}
	}
	return nil
}

// Wants reports whether the webhook is told transitions of kind k.
func (w Webhook) Wants(k Kind) bool { return len(w.On) == 0 || slices.Contains(w.On, k) }

// Redacted is the URL as `notify list` and logs show it: scheme and host,
// and "/…" when a path or query follows, since webhook paths and queries
// often are the secret (Slack and Discord tokens, ntfy topics).
func (w Webhook) Redacted() string { return redactURL(w.URL) }

func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(invalid url)"
	}
	out := u.Scheme + "://" + u.Host
	if strings.Trim(u.EscapedPath(), "/") != "" || u.RawQuery != "" {
		out += "/…"
	}
	return text.OneLine(out)
}
