package presence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// checkRoundTrip: a valid event encodes within MaxEventBytes and decodes
// to itself, so that the ledger replays what the live projection saw.
func checkRoundTrip(t *testing.T, e Event) {
	t.Helper()
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatalf("a valid event does not encode: %v\n%+v", err, e)
	}
	if len(b) > MaxEventBytes {
		t.Fatalf("a valid event encodes to %d bytes", len(b))
	}
	if n := e.size(); len(b) > n {
		t.Fatalf("size() = %d under the %d bytes of the encoding", n, len(b))
	}
	back, err := DecodeJSONL(bytes.NewReader(b))
	if err != nil || len(back) != 1 {
		t.Fatalf("re-decoding %s: %v", b, err)
	}
	want := e
	if len(want.Attrs) == 0 {
		want.Attrs = nil
	}
	if !want.TS.Equal(back[0].TS) {
		t.Fatalf("ts %v became %v", want.TS, back[0].TS)
	}
	want.TS = back[0].TS
	if !reflect.DeepEqual(back[0], want) {
		t.Fatalf("round trip changed the event\n got %#v\nwant %#v", back[0], want)
	}
}

func FuzzDecodeJSONL(f *testing.F) {
	f.Add([]byte(okLine + "\n"))
	f.Add([]byte(okLine + "\r\n\n  \n" + `{"session_id":"s","type":"narration","ts":"2026-08-12T10:02:00.5Z"}`))
	f.Add([]byte(`{"id":"b","session_id":"s","type":"state.task_state","ts":"2026-08-12T10:02:00+02:00","attrs":{"task_state":"blocked","reason":"r","paths":["a","b"],"n":1e3,"ok":true,"z":null}}`))
	f.Add([]byte("{\"id\":\n[1]\nnull\n"))
	session, err := os.ReadFile("testdata/session.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(session)
	f.Fuzz(func(t *testing.T, data []byte) {
		evs, err := DecodeJSONL(bytes.NewReader(data))
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) || le.Line < 1 {
				t.Fatalf("err %v is no *LineError", err)
			}
			if errors.Is(err, ErrMalformedJSON) == errors.Is(err, ErrInvalidEvent) {
				t.Fatalf("err %v is not exactly one of malformed or invalid", err)
			}
			if le.Line > bytes.Count(data, []byte("\n"))+1 {
				t.Fatalf("line %d of %d", le.Line, bytes.Count(data, []byte("\n"))+1)
			}
		}
		for i := range evs {
			if err := evs[i].Validate(); err != nil {
				t.Fatalf("event %d does not validate: %v", i, err)
			}
			if evs[i].ID == "" {
				t.Fatalf("event %d has no id", i)
			}
			checkRoundTrip(t, evs[i])
		}
		FoldSessions(evs)
	})
}

func FuzzEventUnmarshal(f *testing.F) {
	f.Add([]byte(okLine))
	f.Add([]byte(`{"id":"x","session_id":"s","type":"claim.write","ts":"2026-08-12T10:02:00.123456789Z","attrs":{"paths":["a","<b>"]}}`))
	f.Add([]byte(`{"ID":"x","Session_ID":"s","type":"t","ts":"2026-08-12T10:02:00Z","seq":18446744073709551615,"attrs":{"agent_pid":12345678901234567890}}`))
	f.Add([]byte(`{"session_id":"s","type":"t","ts":"0000-01-01T00:00:00Z"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var e Event
		if err := json.Unmarshal(data, &e); err != nil {
			return
		}
		if err := e.Validate(); err != nil {
			var fe *FieldError
			if !errors.Is(err, ErrInvalidEvent) || !errors.As(err, &fe) || fe.Field == "" {
				t.Fatalf("validation error %v names no field", err)
			}
			return
		}
		if e.ID == "" {
			e.ID = "assigned"
		}
		checkRoundTrip(t, e)
		s := Fold([]Event{e})
		if s.Events != 1 || s.SessionID != e.SessionID {
			t.Fatalf("fold of one event: %+v", s)
		}
		PresenceHash(&s)
		sb, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var r State
		if err := json.Unmarshal(sb, &r); err != nil || !reflect.DeepEqual(r, s) {
			t.Fatalf("state round trip: %v\n%+v\n%+v", err, r, s)
		}
	})
}

// fuzzEvents makes events of one session from bytes, four per event: type,
// ts (16 half-milliseconds), id (32 values, so ids collide) and attributes.
// An event with the (ts, id) of an earlier one becomes an exact copy of it:
// one delivery of one event. With unique, every reuse of an id is a copy.
func fuzzEvents(data []byte, unique bool) []Event {
	var evs []Event
	first := map[string]Event{}
	for i := 0; i+4 <= len(data) && len(evs) < 256; i += 4 {
		b := data[i : i+4]
		e := Event{
			ID:        fmt.Sprintf("i%02d", b[2]%32),
			SessionID: testSession,
			Type:      propTypes[int(b[0])%len(propTypes)],
			TS:        t0.Add(time.Duration(b[1]%16) * 500 * time.Microsecond),
		}
		if b[0]&0x80 != 0 {
			e.ParentSessionID = "s-parent"
		}
		a := b[3]
		switch e.Type {
		case TypeTaskState:
			e.SetAttr(AttrTaskState, []string{"active", "blocked", "done"}[a%3])
			if r := []string{"", "r1", "r2"}[(a/3)%3]; r != "" {
				e.SetAttr(AttrReason, r)
			}
		case TypeTaskSet:
			e.SetAttr(AttrTask, []string{"", "t1", "t2"}[a%3])
		case TypeClaimWrite:
			e.SetAttr(AttrPaths, []string{"a", "b", "c", "d"}[:a%5])
		case TypeInputRequested, TypeInputResolved:
			if k := []string{"", "k1", "k2"}[a%3]; k != "" {
				e.SetAttr(AttrRequestKey, k)
			}
		case TypeSessionStart:
			if a%2 == 1 {
				e.SetAttr(AttrSessionName, "harn-1")
			}
		}
		key := e.ID
		if !unique {
			key += "@" + e.TS.String()
		}
		if prev, ok := first[key]; ok {
			e = prev
		} else {
			first[key] = e
		}
		evs = append(evs, e)
	}
	return evs
}

func FuzzFold(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{2, 0, 1, 0, 5, 1, 2, 1, 7, 2, 3, 0, 3, 3, 4, 0})
	f.Add(bytes.Repeat([]byte{9, 3, 7, 1, 14, 3, 8, 2}, 16))
	f.Add([]byte("the quick brown fox jumps over the lazy dog, twice: the quick brown fox"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h := fnv.New64a()
		h.Write(data)
		r := rand.New(rand.NewPCG(h.Sum64(), 7))
		for _, unique := range []bool{false, true} {
			evs := fuzzEvents(data, unique)
			sorted := slices.Clone(evs)
			SortEvents(sorted)
			want := Fold(slices.Clone(sorted))
			shuffled := slices.Clone(evs)
			r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			if got := Fold(shuffled); !reflect.DeepEqual(got, want) {
				t.Fatalf("Fold(shuffled) != Fold(sorted)\n got %+v\nwant %+v", got, want)
			}
			if !unique || len(evs) == 0 {
				continue
			}
			// With one content per id, the live projection agrees too.
			arrival := slices.Clone(evs)
			r.Shuffle(len(arrival), func(i, j int) { arrival[i], arrival[j] = arrival[j], arrival[i] })
			p := newProject(testSession)
			for _, e := range arrival {
				p.add(e)
			}
			if !reflect.DeepEqual(p.s, want) {
				t.Fatalf("live projection != Fold(sorted)\n got %+v\nwant %+v", p.s, want)
			}
		}
	})
}

// ShownNames reads agent text: it never panics, and what it returns is
// bounded, valid text in the projection pattern.
func FuzzShownNames(f *testing.F) {
	for _, s := range []string{"Agent Flint - fix", "[BLOCKED] - Agent Flint - t\n[DONE] - Agent X.", `"Agent a - b" x`,
		"**Agent a - b**", "Agent - t", "Agent ", "[DONE] - Agent ", "\xff Agent \xfe - x", "“Agent Flint - t” ok"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got := ShownNames(text)
		if len(got) > MaxShownNames {
			t.Fatalf("%d names", len(got))
		}
		seen := map[string]bool{}
		for _, n := range got {
			if n == "" || len(n) > MaxShownNameBytes || !utf8.ValidString(n) || strings.ContainsAny(n, "\n") || seen[n] {
				t.Fatalf("bad candidate %q", n)
			}
			if !strings.HasPrefix(n, "Agent ") && !strings.HasPrefix(n, prefixBlocked+"Agent ") && !strings.HasPrefix(n, prefixDone+"Agent ") {
				t.Fatalf("%q is not a projection", n)
			}
			seen[n] = true
		}
	})
}
