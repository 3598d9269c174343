package notify

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestWebhookAddressClasses(t *testing.T) {
	refused := []string{"127.0.0.1", "127.9.9.9", "::1", "0.0.0.0", "::", "10.1.2.3", "172.16.0.1",
		"192.168.1.1", "169.254.169.254", "fe80::1", "fc00::1", "fd12::1", "100.64.0.1", "100.127.255.254",
		"224.0.0.1", "ff02::1", "255.255.255.255", "::ffff:127.0.0.1", "::ffff:10.0.0.1"}
	for _, s := range refused {
		if AddrClass(netip.MustParseAddr(s)) == "" {
			t.Errorf("%s: allowed, want refused", s)
		}
	}
	allowed := []string{"8.8.8.8", "1.1.1.1", "100.128.0.1", "2606:4700::1111", "172.32.0.1"}
	for _, s := range allowed {
		if c := AddrClass(netip.MustParseAddr(s)); c != "" {
			t.Errorf("%s: refused as %s, want allowed", s, c)
		}
	}
}

func TestWebhookToAPrivateAddressIsRefusedWhenAdded(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:9/x", "http://[::1]/x", "http://localhost/x",
		"https://10.0.0.7/hook", "http://169.254.169.254/latest/meta-data", "http://app.localhost./x"} {
		err := CheckTarget(t.Context(), u, false)
		var te *TargetError
		if !errors.As(err, &te) || !errors.Is(err, ErrPrivateTarget) {
			t.Fatalf("%s: err %v, want a TargetError", u, err)
		}
		if msg := err.Error(); !strings.Contains(msg, AllowPrivateFlag) || strings.Contains(msg, "\n") {
			t.Fatalf("%s: %q, want one line naming %s", u, msg, AllowPrivateFlag)
		}
		if err := CheckTarget(t.Context(), u, true); err != nil {
			t.Fatalf("%s with allowPrivate: %v", u, err)
		}
	}
	if err := CheckTarget(t.Context(), "https://93.184.215.14/hook", false); err != nil {
		t.Fatalf("a public address: %v", err)
	}
}

// TestWebhookToAPrivateAddressIsRefusedAtDial: the check at the dialer
// sees the address connected to, whatever name the URL gave, so a name
// that resolves inside later (DNS rebinding) reaches nothing.
func TestWebhookToAPrivateAddressIsRefusedAtDial(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	for _, u := range []string{srv.URL + "/x", strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/x"} {
		err := NewHTTPSender(time.Second, false).Send(t.Context(), Request{URL: u, Body: []byte("{}")})
		var te *TargetError
		if !errors.As(err, &te) || !errors.Is(err, ErrSend) || !te.Permanent() {
			t.Fatalf("%s: err %v, want a permanent TargetError", u, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the private target got %d requests", n)
	}
	if err := NewHTTPSender(time.Second, true).Send(t.Context(), Request{URL: srv.URL + "/x", Body: []byte("{}")}); err != nil {
		t.Fatalf("allowPrivate: %v", err)
	}
}

// TestWebhookRedirectIsNotFollowed: a 307 is a failed delivery, for good;
// the place it points to sees nothing, and the target sees no Referer.
func TestWebhookRedirectIsNotFollowed(t *testing.T) {
	var inner atomic.Int32
	second := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { inner.Add(1) }))
	defer second.Close()
	var referer atomic.Value
	referer.Store("")
	first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		referer.Store(r.Header.Get("Referer"))
		http.Redirect(w, r, second.URL+"/stolen", http.StatusTemporaryRedirect)
	}))
	defer first.Close()
	err := NewHTTPSender(time.Second, true).Send(t.Context(), Request{URL: first.URL + "/secret-path", Body: []byte("{}"),
		Header: http.Header{"Referer": {first.URL + "/secret-path"}}})
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusTemporaryRedirect || !se.Permanent() {
		t.Fatalf("err %v, want a permanent 307 StatusError", err)
	}
	if n := inner.Load(); n != 0 {
		t.Fatalf("the redirect was followed: the second server got %d requests", n)
	}
	if r := referer.Load().(string); r != "" {
		t.Fatalf("Referer %q sent", r)
	}
}
