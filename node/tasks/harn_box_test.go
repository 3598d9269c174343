package tasks

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/runtime/agent/tools"
	"github.com/harn-dev/harn/util/clock"
)

// closingBox is the real Toolbox of a session, telling when it is closed.
type closingBox struct {
	*tools.Toolbox
	closed chan struct{}
}

func (b *closingBox) Close() error {
	err := b.Toolbox.Close()
	select {
	case <-b.closed:
	default:
		close(b.closed)
	}
	return err
}

func boxHost(t *testing.T) (*Host, chan *closingBox) {
	t.Helper()
	boxes := make(chan *closingBox, 8)
	f := Toolboxes(tools.Config{NoMCPFiles: true, SkillDirs: []string{}})
	h, err := New(Config{Node: "n1", KV: &memKV{}, Key: bytes.Repeat([]byte{7}, 32), Clock: clock.Real{},
		Boxes: func(s BoxSpec) (SessionBox, error) {
			b, err := f(s)
			if err != nil {
				return nil, err
			}
			cb := &closingBox{Toolbox: b.(*tools.Toolbox), closed: make(chan struct{})}
			boxes <- cb
			return cb, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h, boxes
}

func waitClosed(t *testing.T, b *closingBox, what string) {
	t.Helper()
	select {
	case <-b.closed:
	case <-time.After(10 * time.Second):
		t.Fatalf("the session's tool box was not closed when %s", what)
	}
}

func TestHarnSessionPublishesItsOwnBoxCatalogAndClosesItWhenTheSessionEnds(t *testing.T) {
	h, boxes := boxHost(t)
	opts := HarnOptions{Model: "gpt-4o", URL: "http://127.0.0.1:1/v1", Key: "k"}
	id, err := h.OpenHarn(opts, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b := <-boxes
	if b.Catalog() != "harn:"+id {
		t.Fatalf("catalog %q", b.Catalog())
	}
	// The session's catalog is the box's: the core and discovery tools.
	var names []string
	for _, c := range b.Capabilities() {
		names = append(names, c.Name)
	}
	for _, want := range []string{"read", "shell", "capabilities_list", "tools_load", "skills_activate"} {
		if !slices.Contains(names, want) {
			t.Fatalf("the box's catalog lacks %s: %v", want, names)
		}
	}
	h.Observe([]presence.Event{{SessionID: id, Type: presence.TypeSessionEnd, TS: time.Now(), Agent: Agent}})
	waitClosed(t, b, "its session ended")
	_, err = h.Do(Action{Op: OpFollowUp, Session: id, Text: "again"})
	if !errors.Is(err, ErrEnded) {
		t.Fatalf("a task on an ended session: %v, want ErrEnded", err)
	}
}

func TestHarnSessionBoxClosesWithTheNode(t *testing.T) {
	h, boxes := boxHost(t)
	if _, err := h.OpenHarn(HarnOptions{Model: "gpt-4o", URL: "http://127.0.0.1:1/v1", Key: "k"}, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	b := <-boxes
	h.Close()
	waitClosed(t, b, "the node closed")
}

func TestHarnSessionWhoseMCPServerDoesNotStartIsRefused(t *testing.T) {
	h, boxes := boxHost(t)
	_, err := h.OpenHarn(HarnOptions{Model: "gpt-4o", URL: "http://127.0.0.1:1/v1", Key: "k",
		MCP: []string{"gone=/nonexistent/mcp-server"}}, t.TempDir())
	if !errors.Is(err, ErrBadAction) {
		t.Fatalf("open with a server that cannot start: %v, want ErrBadAction", err)
	}
	waitClosed(t, <-boxes, "its open failed")
	for _, bad := range []string{"x", "=cmd", "a__b=cmd", "dup=a"} {
		mcp := []string{bad}
		if bad == "dup=a" {
			mcp = []string{bad, bad}
		}
		if _, err := h.OpenHarn(HarnOptions{Model: "gpt-4o", Key: "k", MCP: mcp}, t.TempDir()); !errors.Is(err, ErrBadAction) {
			t.Fatalf("--mcp %v: %v, want ErrBadAction", mcp, err)
		}
	}
}
