package tasks

import (
	"bytes"
	"testing"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/util/clock"
)

// authOf runs one harn turn with options o and returns the Authorization
// header the model server got.
func authOf(t *testing.T, h *Host, srv *modeltest.Server, o HarnOptions) string {
	t.Helper()
	id, err := h.OpenHarn(o, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	v, err := h.rt.Start(id, runtime.Request{Text: "hi", Grants: []runtime.Grant{{Level: runtime.Execute, Capability: "read"}}})
	if err != nil {
		t.Fatal(err)
	}
	waitTaskDone(t, h, v.ID)
	hs := srv.Headers()
	if len(hs) == 0 {
		t.Fatal("the model server got no request")
	}
	return hs[len(hs)-1].Get("Authorization")
}

// TestTheNodesKeyGoesOnlyToItsOwnProvider: a session that names no URL
// runs with the node's provider and key; one that names another URL (or
// another API) gets no key of the node's; a caller's own key goes where
// the caller says. A node with a key and no URL sends it to the vendor's
// URL only, so a caller-named URL gets nothing either.
func TestTheNodesKeyGoesOnlyToItsOwnProvider(t *testing.T) {
	own, other := modeltest.New(t), modeltest.New(t)
	for _, s := range []*modeltest.Server{own, other} {
		s.SetFallback(func(map[string]any) modeltest.Reply { return modeltest.Text("ok") })
	}
	h, err := New(Config{Node: "n1", KV: &memKV{}, Key: bytes.Repeat([]byte{7}, 32), Clock: clock.Real{},
		Provider: Provider{URL: own.URL(), Key: "sk-node"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	if got := authOf(t, h, own, HarnOptions{Model: "test-model"}); got != "Bearer sk-node" {
		t.Fatalf("the node's own provider got %q", got)
	}
	if got := authOf(t, h, own, HarnOptions{Model: "test-model", URL: own.URL() + "/"}); got != "Bearer sk-node" {
		t.Fatalf("the node's own URL, named: %q", got)
	}
	if got := authOf(t, h, other, HarnOptions{Model: "test-model", URL: other.URL()}); got != "" {
		t.Fatalf("a caller-named URL got %q", got)
	}
	if got := authOf(t, h, other, HarnOptions{Model: "test-model", URL: other.URL(), Key: "sk-caller"}); got != "Bearer sk-caller" {
		t.Fatalf("a caller's own key: %q", got)
	}
	h2, err := New(Config{Node: "n2", KV: &memKV{}, Key: bytes.Repeat([]byte{7}, 32), Clock: clock.Real{},
		Provider: Provider{Key: "sk-node"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h2.Close)
	if got := authOf(t, h2, other, HarnOptions{Model: "test-model", URL: other.URL()}); got != "" {
		t.Fatalf("a node without a URL sent its key to a caller-named URL: %q", got)
	}
}
