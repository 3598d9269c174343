package notify

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func sampleHooks(t *testing.T) []Webhook {
	return []Webhook{
		mustHook(t, "https://ntfy.example/topic", "needs_input,blocked", "ntfy"),
		mustHook(t, "https://hooks.slack.com/services/T/B/X", "", "slack"),
		mustHook(t, "http://127.0.0.1:9000/harn", "done", "json"),
	}
}

func sameHooks(a, b []Webhook) bool {
	return slices.EqualFunc(a, b, func(x, y Webhook) bool {
		return x.ID == y.ID && x.URL == y.URL && x.Format == y.Format && slices.Equal(x.On, y.On)
	})
}

func TestEncodeDecodeConfigsRoundTrip(t *testing.T) {
	hooks := sampleHooks(t)
	b, err := EncodeConfigs(hooks)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), `{"version":1,"webhooks":[`) {
		t.Fatalf("encoded %s", b)
	}
	got, err := DecodeConfigs(b)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(hooks)
	slices.SortFunc(want, func(a, b Webhook) int { return strings.Compare(a.ID, b.ID) })
	if !sameHooks(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if empty, err := DecodeConfigs(nil); err != nil || len(empty) != 0 {
		t.Fatalf("empty: %v %v", empty, err)
	}
	if b, err := EncodeConfigs(nil); err != nil || string(b) != `{"version":1,"webhooks":[]}` {
		t.Fatalf("nil list: %s %v", b, err)
	}
}

func TestDecodeConfigsRefusesNewerVersion(t *testing.T) {
	_, err := DecodeConfigs([]byte(`{"version":2,"webhooks":[]}`))
	if !errors.Is(err, ErrConfigVersion) || !strings.Contains(err.Error(), "upgrade harn") {
		t.Fatalf("err %v", err)
	}
}

func TestDecodeConfigsRefusesOversized(t *testing.T) {
	big := make([]byte, MaxConfigBytes+1)
	if _, err := DecodeConfigs(big); !errors.Is(err, ErrConfigTooLarge) {
		t.Fatalf("err %v", err)
	}
	var many []Webhook
	for i := range MaxWebhooks + 1 {
		many = append(many, mustHook(t, fmt.Sprintf("http://127.0.0.1:1/%d", i), "", "json"))
	}
	if _, err := EncodeConfigs(many); !errors.Is(err, ErrConfigTooLarge) {
		t.Fatalf("err %v", err)
	}
}

func TestDecodeConfigsRefusesCorruptInput(t *testing.T) {
	good, _ := EncodeConfigs(sampleHooks(t))
	for _, in := range []string{
		`{`, `[]`, `{"version":1,"webhooks":[{"id":"wh-00000000","url":"http://x/","format":"json"}]}`,
		`{"version":1,"webhooks":[],"extra":1}`, string(good) + `}`, string(good) + `{}`,
		`{"version":1,"webhooks":[{"id":"x","url":"ftp://x/","format":"json"}]}`,
	} {
		if _, err := DecodeConfigs([]byte(in)); !errors.Is(err, ErrConfigCorrupt) {
			t.Errorf("%s: err %v", in, err)
		}
	}
}

func TestEncodeConfigsRefusesDuplicate(t *testing.T) {
	h := mustHook(t, "https://ntfy.example/topic", "", "ntfy")
	if _, err := EncodeConfigs([]Webhook{h, h}); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("err %v", err)
	}
	bad := h
	bad.URL = "gopher://x"
	if _, err := EncodeConfigs([]Webhook{bad}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("err %v", err)
	}
}

func FuzzDecodeConfigs(f *testing.F) {
	var hooks []Webhook
	for _, a := range [][3]string{{"https://ntfy.example/topic", "needs_input", "ntfy"}, {"http://127.0.0.1:1/x", "", "json"}} {
		w, _ := NewWebhook(a[0], a[1], a[2])
		hooks = append(hooks, w)
	}
	good, _ := EncodeConfigs(hooks)
	f.Add(good)
	f.Add([]byte(`{"version":1,"webhooks":[]}`))
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`{"version":1,"webhooks":null}`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := DecodeConfigs(b)
		if err != nil {
			if !errors.Is(err, ErrConfigCorrupt) && !errors.Is(err, ErrConfigVersion) && !errors.Is(err, ErrConfigTooLarge) {
				t.Fatalf("untyped error %v", err)
			}
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("error on more than one line: %q", err)
			}
			return
		}
		again, err := EncodeConfigs(got)
		if err != nil {
			t.Fatalf("a decoded list does not encode: %v", err)
		}
		back, err := DecodeConfigs(again)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		sorted := slices.Clone(got)
		slices.SortFunc(sorted, func(a, b Webhook) int { return strings.Compare(a.ID, b.ID) })
		if !sameHooks(back, sorted) {
			t.Fatalf("round trip changed the list: %+v vs %+v", back, sorted)
		}
	})
}
