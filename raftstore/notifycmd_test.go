package raftstore

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func spec(url string) []byte { return []byte(fmt.Sprintf(`{"id":"x","url":%q,"format":"json"}`, url)) }

func hookIDs(hs []NotifyHook) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.ID)
	}
	return out
}

func TestNotifySetReplacesAndRemoveDeletes(t *testing.T) {
	r := NewRegistry()
	mustApply(t, r, 1, NotifySetCommand("wh-b", spec("http://b")))
	mustApply(t, r, 2, NotifySetCommand("wh-a", spec("http://a")))
	hs, idx := r.NotifyHooks()
	if got := strings.Join(hookIDs(hs), ","); got != "wh-a,wh-b" || idx != 2 {
		t.Fatalf("hooks %s at %d, want wh-a,wh-b at 2", got, idx)
	}
	mustApply(t, r, 3, NotifySetCommand("wh-a", spec("http://a2")))
	hs, idx = r.NotifyHooks()
	if !bytes.Equal(hs[0].Spec, spec("http://a2")) || idx != 3 {
		t.Fatalf("replace: %s at %d", hs[0].Spec, idx)
	}
	mustApply(t, r, 4, NotifyRemoveCommand("wh-a"))
	mustApply(t, r, 5, NotifyRemoveCommand("wh-missing"))
	hs, idx = r.NotifyHooks()
	if got := strings.Join(hookIDs(hs), ","); got != "wh-b" || idx != 4 {
		t.Fatalf("after remove: %s at %d, want wh-b at 4 (removing a missing id changes nothing)", got, idx)
	}
}

func TestNotifySetOfTheSameSpecChangesNothing(t *testing.T) {
	r := NewRegistry()
	mustApply(t, r, 1, NotifySetCommand("wh-a", spec("http://a")))
	mustApply(t, r, 7, NotifySetCommand("wh-a", spec("http://a")))
	if _, idx := r.NotifyHooks(); idx != 1 {
		t.Fatalf("index %d, want 1", idx)
	}
}

func TestNotifyHooksBoundedByMaxNotifyHooks(t *testing.T) {
	r := NewRegistry()
	for i := 0; i < MaxNotifyHooks; i++ {
		mustApply(t, r, uint64(i+1), NotifySetCommand(fmt.Sprintf("wh-%02d", i), spec("http://a")))
	}
	err := r.Apply(100, NotifySetCommand("wh-over", spec("http://a")))
	if !errors.Is(err, ErrNotifyFull) {
		t.Fatalf("33rd webhook: %v, want ErrNotifyFull", err)
	}
	// Replacing one that exists is still allowed.
	mustApply(t, r, 101, NotifySetCommand("wh-00", spec("http://b")))
	if hs, _ := r.NotifyHooks(); len(hs) != MaxNotifyHooks {
		t.Fatalf("%d hooks", len(hs))
	}
}

func TestNotifyCommandValidation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cmd   Command
		field string
	}{
		{"set without notify", Command{Op: OpNotifySet}, "notify"},
		{"empty id", NotifySetCommand("", spec("http://a")), "notify.id"},
		{"id with space", NotifySetCommand("wh a", spec("http://a")), "notify.id"},
		{"id too long", NotifySetCommand(strings.Repeat("a", MaxNotifyIDLen+1), spec("http://a")), "notify.id"},
		{"spec not json", NotifySetCommand("wh-a", []byte("{nope")), "notify.spec"},
		{"spec an array", NotifySetCommand("wh-a", []byte("[1]")), "notify.spec"},
		{"spec empty", NotifySetCommand("wh-a", nil), "notify.spec"},
		{"spec too large", NotifySetCommand("wh-a", []byte(`{"a":"`+strings.Repeat("x", MaxNotifySpecBytes)+`"}`)), "notify.spec"},
		{"remove with spec", Command{Op: OpNotifyRemove, Notify: &NotifyHook{ID: "wh-a", Spec: spec("x")}}, "notify.spec"},
		{"notify with upserts", Command{Op: OpNotifySet, Notify: &NotifyHook{ID: "a", Spec: spec("x")},
			Upserts: []Upsert{{SessionID: "s", TS: time.Now(), Task: &TaskPatch{}}}}, "notify"},
		{"upsert carrying notify", Command{Op: OpDelete, SessionIDs: []string{"s"}, Notify: &NotifyHook{ID: "a"}}, "notify"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cmd.Validate()
			if !errors.Is(err, ErrInvalidCommand) || !strings.Contains(err.Error(), tc.field+":") {
				t.Fatalf("Validate: %v; want ErrInvalidCommand naming %s", err, tc.field)
			}
			if _, err := EncodeCommand(tc.cmd); !errors.Is(err, ErrInvalidCommand) {
				t.Fatalf("EncodeCommand: %v", err)
			}
		})
	}
}

func TestNotifyHooksSurviveASnapshot(t *testing.T) {
	r := NewRegistry()
	mustApply(t, r, 1, NotifySetCommand("wh-a", spec("http://a")))
	mustApply(t, r, 2, UpsertCommand(Upsert{SessionID: "s", TS: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Task: &TaskPatch{Text: "t"}}))
	b, err := r.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	r2 := NewRegistry()
	if err := r2.Restore(b); err != nil {
		t.Fatal(err)
	}
	hs, idx := r2.NotifyHooks()
	if len(hs) != 1 || hs[0].ID != "wh-a" || !bytes.Equal(hs[0].Spec, spec("http://a")) || idx != 1 {
		t.Fatalf("restored %+v at %d", hs, idx)
	}
	b2, _ := r2.Snapshot()
	if !bytes.Equal(b, b2) {
		t.Fatalf("snapshot of the restored registry differs:\n%s\n%s", b, b2)
	}
}

// TestNotifyApplyIsDeterministic: replicas that apply the same log hold
// the same webhooks and write the same snapshot bytes.
func TestNotifyApplyIsDeterministic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 60).Draw(t, "n")
		var log [][]byte
		for i := 0; i < n; i++ {
			id := fmt.Sprintf("wh-%d", rapid.IntRange(0, 40).Draw(t, "id"))
			var c Command
			if rapid.Bool().Draw(t, "remove") {
				c = NotifyRemoveCommand(id)
			} else {
				c = NotifySetCommand(id, spec(rapid.SampledFrom([]string{"http://a", "http://b"}).Draw(t, "url")))
			}
			b, err := EncodeCommand(c)
			if err != nil {
				t.Fatal(err)
			}
			log = append(log, b)
		}
		a, b := NewRegistry(), NewRegistry()
		for i, e := range log {
			ca, err := DecodeCommand(e)
			if err != nil {
				t.Fatal(err)
			}
			cb, _ := DecodeCommand(e)
			errA, errB := a.Apply(uint64(i+1), ca), b.Apply(uint64(i+1), cb)
			if (errA == nil) != (errB == nil) {
				t.Fatalf("entry %d: %v vs %v", i, errA, errB)
			}
		}
		sa, _ := a.Snapshot()
		sb, _ := b.Snapshot()
		if !bytes.Equal(sa, sb) {
			t.Fatalf("replicas differ")
		}
		if hs, _ := a.NotifyHooks(); len(hs) > MaxNotifyHooks {
			t.Fatalf("%d hooks, more than %d", len(hs), MaxNotifyHooks)
		}
	})
}

// FuzzDecodeNotifyCommand: notify entries arrive from other servers;
// decoding never panics, a decoded command applies without panicking, and
// the registry's webhooks stay within their bounds and survive a snapshot.
func FuzzDecodeNotifyCommand(f *testing.F) {
	for _, c := range []Command{NotifySetCommand("wh-1", spec("http://a")), NotifyRemoveCommand("wh-1")} {
		if b, err := EncodeCommand(c); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("\x01{\"op\":\"notify_set\",\"notify\":{\"id\":\"a\",\"spec\":[]}}"))
	f.Add([]byte("\x01{\"op\":\"upsert\",\"notify\":{\"id\":\"a\"}}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		cmd, err := DecodeCommand(b)
		if err != nil {
			return
		}
		r := NewRegistry()
		_ = r.Apply(1, cmd)
		hs, _ := r.NotifyHooks()
		for _, h := range hs {
			if len(h.Spec) > MaxNotifySpecBytes || len(h.ID) > MaxNotifyIDLen {
				t.Fatalf("out of bounds: %q", h.ID)
			}
		}
		snap, err := r.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		if err := NewRegistry().Restore(snap); err != nil {
			t.Fatal(err)
		}
	})
}

// TestNotifySpecKeptCompactAsASnapshotWritesIt: a spec with blanks and
// the same spec compacted are one spec, on a replica that applied the log
// and on one restored from a snapshot alike.
func TestNotifySpecKeptCompactAsASnapshotWritesIt(t *testing.T) {
	r := NewRegistry()
	mustApply(t, r, 1, NotifySetCommand("wh-a", []byte(`{ "url" : "http://a" }`)))
	b, _ := r.Snapshot()
	r2 := NewRegistry()
	if err := r2.Restore(b); err != nil {
		t.Fatal(err)
	}
	for _, reg := range []*Registry{r, r2} {
		mustApply(t, reg, 2, NotifySetCommand("wh-a", []byte(`{"url":"http://a"}`)))
		if _, idx := reg.NotifyHooks(); idx != 1 {
			t.Fatalf("index %d, want 1: the same spec changed the registry", idx)
		}
	}
}
