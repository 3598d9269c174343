package notify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// ConfigVersion is the version EncodeConfigs writes and the newest
// DecodeConfigs reads.
const ConfigVersion = 1

// Bounds of the stored configuration.
const (
	// MaxConfigBytes bounds the encoded list (a registry value).
	MaxConfigBytes = 64 << 10
	// MaxWebhooks bounds the number of webhooks of a mesh.
	MaxWebhooks = 32
)

// Errors of the stored configuration.
var (
	// ErrConfigTooLarge: the encoded list is over MaxConfigBytes, or it
	// has more than MaxWebhooks webhooks.
	ErrConfigTooLarge = errors.New("notify: webhook configuration too large")
	// ErrConfigVersion: the list was written by a newer harn.
	ErrConfigVersion = errors.New("notify: webhook configuration has an unknown version")
	// ErrConfigCorrupt: the stored bytes are not a webhook list.
	ErrConfigCorrupt = errors.New("notify: webhook configuration is not readable")
	// ErrDuplicate: two webhooks have the same ID (the same URL and format).
	ErrDuplicate = errors.New("notify: webhook already configured")
)

type configFile struct {
	Version  int       `json:"version"`
	Webhooks []Webhook `json:"webhooks"`
}

// EncodeConfigs is the registry form of the mesh's webhooks: versioned
// JSON, sorted by ID. Every webhook is validated; duplicates and lists over
// the bounds are refused.
func EncodeConfigs(hooks []Webhook) ([]byte, error) {
	if len(hooks) > MaxWebhooks {
		return nil, fmt.Errorf("%w: %d webhooks, at most %d; remove one first", ErrConfigTooLarge, len(hooks), MaxWebhooks)
	}
	sorted := slices.Clone(hooks)
	slices.SortFunc(sorted, func(a, b Webhook) int { return strings.Compare(a.ID, b.ID) })
	for i, w := range sorted {
		if err := w.Validate(); err != nil {
			return nil, err
		}
		if i > 0 && sorted[i-1].ID == w.ID {
			return nil, fmt.Errorf("%w: %s (%s)", ErrDuplicate, w.ID, w.Redacted())
		}
	}
	if sorted == nil {
		sorted = []Webhook{}
	}
	b, err := json.Marshal(configFile{Version: ConfigVersion, Webhooks: sorted})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfigCorrupt, err)
	}
	if len(b) > MaxConfigBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrConfigTooLarge, len(b), MaxConfigBytes)
	}
	return b, nil
}

// DecodeConfigs reads what EncodeConfigs wrote. Empty input is an empty
// list. It refuses oversized input, an unknown version, unknown fields,
// trailing data, invalid webhooks and duplicates, so a list it returns
// always encodes again.
func DecodeConfigs(b []byte) ([]Webhook, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if len(b) > MaxConfigBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrConfigTooLarge, len(b), MaxConfigBytes)
	}
	var head struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfigCorrupt, err)
	}
	if head.Version != ConfigVersion {
		return nil, fmt.Errorf("%w: %d (this harn reads %d); upgrade harn", ErrConfigVersion, head.Version, ConfigVersion)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var f configFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfigCorrupt, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: trailing data after the list", ErrConfigCorrupt)
	}
	if len(f.Webhooks) > MaxWebhooks {
		return nil, fmt.Errorf("%w: %d webhooks, at most %d", ErrConfigTooLarge, len(f.Webhooks), MaxWebhooks)
	}
	seen := map[string]bool{}
	for _, w := range f.Webhooks {
		if err := w.Validate(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfigCorrupt, err)
		}
		if seen[w.ID] {
			return nil, fmt.Errorf("%w: %w: %s", ErrConfigCorrupt, ErrDuplicate, w.ID)
		}
		seen[w.ID] = true
	}
	return f.Webhooks, nil
}
