package cli

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/cli/hook"
)

// TestHookReadsOneJSONValueWithoutEOF: the hook takes the first complete
// JSON value from stdin and stops there; it never waits for EOF. What is
// not one value comes back as read, for the adapter to refuse.
func TestHookReadsOneJSONValueWithoutEOF(t *testing.T) {
	const payload = `{"session_id":"s1","hook_event_name":"Stop","nested":{"a":[1,2,"}"]}}`
	cases := []struct {
		name   string
		writes []string // written to a pipe that is never closed
		close  bool
		max    int64
		want   string
	}{
		{"pipe left open after the payload", []string{payload}, false, 1 << 20, payload},
		{"payload in pieces, pipe left open", []string{payload[:10], payload[10:30], payload[30:]}, false, 1 << 20, payload},
		{"trailing newline and more data after the value", []string{payload + "\n{\"second\":true}\n"}, true, 1 << 20, payload},
		{"leading whitespace", []string{"\n\t " + payload}, false, 1 << 20, payload},
		{"closed at once: empty", nil, true, 1 << 20, ""},
		{"garbage comes back as read", []string{"this is not json"}, true, 1 << 20, "this is not json"},
		{"a cut-off value comes back as read", []string{`{"session_id":"s1"`}, true, 1 << 20, `{"session_id":"s1"`},
		{"too large: max bytes come back", []string{`{"p":"` + strings.Repeat("x", 100) + `"}`}, false, 50, `{"p":"` + strings.Repeat("x", 44)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer pr.Close()
			defer pw.Close()
			go func() {
				for _, w := range c.writes {
					if _, err := pw.Write([]byte(w)); err != nil {
						return
					}
				}
				if c.close {
					pw.Close()
				}
			}()
			done := make(chan []byte, 1)
			go func() { done <- hook.ReadPayload(pr, c.max, time.Minute) }()
			select {
			case got := <-done:
				if string(got) != c.want {
					t.Fatalf("got %q; want %q", got, c.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("readPayload did not return without EOF")
			}
		})
	}
}

// TestHookReadGivesUpAtItsBound: a payload that never completes returns
// what was read once the wait is over.
func TestHookReadGivesUpAtItsBound(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	if _, err := pw.Write([]byte(`{"session_id":`)); err != nil { // the kernel buffers it
		t.Fatal(err)
	}
	got := hook.ReadPayload(pr, 1<<20, 500*time.Millisecond)
	if !bytes.Equal(got, []byte(`{"session_id":`)) {
		t.Fatalf("got %q", got)
	}
}
