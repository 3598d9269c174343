package presence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

func TestDecodeJSONLSessionFile(t *testing.T) {
	f, err := os.Open("testdata/session.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	evs, err := DecodeJSONL(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 16 {
		t.Fatalf("decoded %d events, want 16 (blank lines skipped)", len(evs))
	}
	// The event without an id is named after its line.
	if evs[1].ID != "line-00000003" || evs[1].Type != TypeTaskSet {
		t.Fatalf("second event %+v", evs[1])
	}
	// The CRLF line decodes like the others.
	if evs[6].Type != TypeToolPreUse || evs[6].AttrString(AttrTool) != "Edit" {
		t.Fatalf("CRLF line %+v", evs[6])
	}
	// Lists of strings are []string.
	if got := evs[7].Attrs[AttrPaths]; !reflect.DeepEqual(got, []string{"presence/jsonl.go", "presence/jsonl_test.go"}) {
		t.Fatalf("paths %#v", got)
	}

	states := FoldSessions(evs)
	if len(states) != 2 {
		t.Fatalf("%d sessions", len(states))
	}
	s := states["s-42"]
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"session_id":             "s-42",
		"activity":               "needs_input",
		"activity_updated_at":    "2026-08-12T10:02:00.000Z",
		"activity_source":        "interaction.input_requested",
		"task_state":             "active",
		"task_state_updated_at":  "2026-08-12T09:30:00.000Z",
		"task":                   "add the JSONL decoder",
		"name":                   "harn-7",
		"session_name":           "Agent harn-7 - add the JSONL decoder",
		"suggested_session_name": "Agent harn-7 - add the JSONL decoder",
		"events":                 float64(12),
		"agent_pid":              float64(4242),
		"cwd":                    "/src/harn",
	}
	for k, v := range want {
		if !reflect.DeepEqual(m[k], v) {
			t.Errorf("%s = %#v, want %#v", k, m[k], v)
		}
	}
	if _, ok := m["blocker_reason"]; ok {
		t.Error("blocker_reason survives leaving blocked")
	}
	if !reflect.DeepEqual(s.Claims, []string{"presence/jsonl.go", "presence/jsonl_test.go"}) {
		t.Errorf("claims %v", s.Claims)
	}
	o := states["s-43"]
	if o.Activity != ActivityIdle || o.ActivitySource != TypeTurnStop || o.Agent != "codex" || o.Events != 3 {
		t.Errorf("s-43: %+v", o)
	}

	// Reading the file again names the id-less event the same way.
	again, err := DecodeJSONL(bytes.NewReader(mustRead(t, "testdata/session.jsonl")))
	if err != nil || !reflect.DeepEqual(again, evs) {
		t.Fatalf("second read differs: %v", err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const okLine = `{"id":"a","session_id":"s","type":"tool.pre_use","ts":"2026-08-12T10:02:00.000Z"}`

func TestDecodeJSONLShapes(t *testing.T) {
	cases := map[string]struct {
		in   string
		want int
	}{
		"empty":               {"", 0},
		"only blank lines":    {"\n \n\t\r\n\n", 0},
		"no final newline":    {okLine, 1},
		"CRLF":                {okLine + "\r\n" + okLine + "\r\n", 2},
		"blank between":       {okLine + "\n\n\n" + okLine, 2},
		"indented":            {"   " + okLine + "  \n", 1},
		"unknown fields kept": {`{"id":"a","session_id":"s","type":"x.y","ts":"2026-08-12T10:02:00Z","extra":[1,2]}`, 1},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			evs, err := DecodeJSONL(strings.NewReader(c.in))
			if err != nil || len(evs) != c.want {
				t.Fatalf("got %d events, %v; want %d", len(evs), err, c.want)
			}
		})
	}
}

func TestDecodeJSONLErrors(t *testing.T) {
	cases := []struct {
		name  string
		in    string
		line  int
		want  error
		field string
	}{
		{"truncated object", okLine + "\n{\"id\":\n", 2, ErrMalformedJSON, ""},
		{"not an object", "\n\n[1,2]\n", 3, ErrMalformedJSON, ""},
		{"wrong field type", `{"id":1,"session_id":"s","type":"t","ts":"2026-08-12T10:02:00Z"}`, 1, ErrMalformedJSON, ""},
		{"two objects on a line", okLine + okLine, 1, ErrMalformedJSON, ""},
		{"garbage", "\n\nhello\n", 3, ErrMalformedJSON, ""},
		{"null", "null", 1, ErrInvalidEvent, "session_id"},
		{"missing session", `{"id":"a","type":"t","ts":"2026-08-12T10:02:00Z"}`, 1, ErrInvalidEvent, "session_id"},
		{"missing type", `{"id":"a","session_id":"s","ts":"2026-08-12T10:02:00Z"}`, 1, ErrInvalidEvent, "type"},
		{"missing ts", okLine + "\n" + `{"id":"a","session_id":"s","type":"t"}`, 2, ErrInvalidEvent, "ts"},
		{"bad ts", `{"id":"a","session_id":"s","type":"t","ts":"yesterday"}`, 1, ErrInvalidEvent, "ts"},
		{"bad task state", `{"id":"a","session_id":"s","type":"state.task_state","ts":"2026-08-12T10:02:00Z","attrs":{"task_state":"finished"}}`, 1, ErrInvalidEvent, "attrs.task_state"},
		{"nested attr", `{"id":"a","session_id":"s","type":"t","ts":"2026-08-12T10:02:00Z","attrs":{"x":{"y":1}}}`, 1, ErrInvalidEvent, "attrs.x"},
		{"reason too long", `{"id":"a","session_id":"s","type":"t","ts":"2026-08-12T10:02:00Z","attrs":{"reason":"` + strings.Repeat("r", MaxReasonChars+1) + `"}}`, 1, ErrInvalidEvent, "attrs.reason"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			evs, err := DecodeJSONL(strings.NewReader(c.in))
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("err = %#v, want a *LineError", err)
			}
			if le.Line != c.line {
				t.Fatalf("line %d, want %d", le.Line, c.line)
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if c.want == ErrMalformedJSON && errors.Is(err, ErrInvalidEvent) || c.want == ErrInvalidEvent && errors.Is(err, ErrMalformedJSON) {
				t.Fatalf("err = %v is both malformed and invalid", err)
			}
			if c.field != "" {
				var fe *FieldError
				if !errors.As(err, &fe) || fe.Field != c.field {
					t.Fatalf("err = %v, want a *FieldError naming %s", err, c.field)
				}
			}
			if got, want := le.Error(), fmt.Sprintf("line %d: %v", c.line, le.Err); got != want {
				t.Fatalf("Error() = %q, want %q", got, want)
			}
			// The events before the bad line come back; none after it.
			if len(evs) != strings.Count(c.in[:lineStart(c.in, c.line)], okLine) {
				t.Fatalf("%d events before line %d", len(evs), c.line)
			}
		})
	}
}

// lineStart is the offset of 1-based line n in s.
func lineStart(s string, n int) int {
	off := 0
	for i := 1; i < n; i++ {
		off += strings.IndexByte(s[off:], '\n') + 1
	}
	return off
}

func TestDecodeJSONLLineLimit(t *testing.T) {
	// A line of exactly MaxEventBytes (padded with spaces inside the
	// object) is read; one byte more is refused, also with CRLF.
	pad := func(n int) string {
		return okLine[:len(okLine)-1] + strings.Repeat(" ", n-len(okLine)) + "}"
	}
	exact := pad(MaxEventBytes)
	if len(exact) != MaxEventBytes {
		t.Fatal(len(exact))
	}
	for _, in := range []string{exact, exact + "\n", exact + "\r\n", okLine + "\n" + exact + "\n" + okLine} {
		if _, err := DecodeJSONL(strings.NewReader(in)); err != nil {
			t.Fatalf("a line of MaxEventBytes is refused: %v", err)
		}
	}
	over := pad(MaxEventBytes + 1)
	for _, in := range []string{over, over + "\n", over + "\r\n", pad(10 * MaxEventBytes)} {
		evs, err := DecodeJSONL(strings.NewReader(okLine + "\n\n" + in + "\n" + okLine))
		var le *LineError
		var fe *FieldError
		if !errors.As(err, &le) || le.Line != 3 || !errors.Is(err, ErrInvalidEvent) || !errors.As(err, &fe) || fe.Field != "event" {
			t.Fatalf("a line over MaxEventBytes: %v", err)
		}
		if len(evs) != 1 {
			t.Fatalf("%d events before the long line", len(evs))
		}
	}
	// An endless line is refused without reading it all.
	r := &countingReader{r: neverEnding('x')}
	if _, err := DecodeJSONL(r); !errors.Is(err, ErrInvalidEvent) {
		t.Fatalf("endless line: %v", err)
	}
	if r.n > 2*MaxEventBytes {
		t.Fatalf("read %d bytes of an endless line", r.n)
	}
}

type neverEnding byte

func (b neverEnding) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestDecodeJSONLReadError(t *testing.T) {
	boom := errors.New("disk on fire")
	evs, err := DecodeJSONL(io.MultiReader(strings.NewReader(okLine+"\n"), iotest.ErrReader(boom)))
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the read error", err)
	}
	var le *LineError
	if errors.As(err, &le) {
		t.Fatalf("a read error is no line error: %v", err)
	}
	if len(evs) != 1 {
		t.Fatalf("%d events before the read error", len(evs))
	}
}

func TestDecodeJSONLKeepsIDs(t *testing.T) {
	in := okLine + "\n" + `{"session_id":"s","type":"narration","ts":"2026-08-12T10:02:00Z"}` + "\n\n" +
		`{"id":"","session_id":"s","type":"narration","ts":"2026-08-12T10:02:00Z"}`
	evs, err := DecodeJSONL(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	got := []string{evs[0].ID, evs[1].ID, evs[2].ID}
	if !reflect.DeepEqual(got, []string{"a", "line-00000002", "line-00000004"}) {
		t.Fatalf("ids %v", got)
	}
	// Two id-less events at the same time stay two events, folded in line
	// order whatever order they are handed over in.
	s1 := fold(evs...)
	s2 := fold(evs[2], evs[1], evs[0])
	if s1.Events != 3 || !reflect.DeepEqual(s1, s2) {
		t.Fatalf("%+v\n%+v", s1, s2)
	}
}

func TestFoldSessionsLeavesInputAlone(t *testing.T) {
	evs := []Event{ev(3, TypeTurnStop), ev(1, TypeUserPromptSubmit), ev(2, TypeToolPreUse)}
	evs[1].SessionID = "other"
	keep := append([]Event(nil), evs...)
	got := FoldSessions(evs)
	if !reflect.DeepEqual(evs, keep) {
		t.Fatal("FoldSessions reordered its input")
	}
	if got[testSession].Events != 2 || got["other"].Events != 1 || got[testSession].Activity != ActivityIdle {
		t.Fatalf("%+v", got)
	}
	if len(FoldSessions(nil)) != 0 {
		t.Fatal("sessions from nothing")
	}
}
