package hookkit

import (
	"errors"
	"strings"
	"testing"

	"github.com/harn-dev/harn/presence/adapter"
)

// TestNonUTF8SessionIDIsRefusedNotRewritten: encoding/json would read an
// id of invalid bytes, or of a lone surrogate escape, as U+FFFD; Parse
// refuses it, naming the field.
func TestNonUTF8SessionIDIsRefusedNotRewritten(t *testing.T) {
	for _, c := range []struct{ field, raw string }{
		{"session_id", "\"s-\xff\xfe\""},
		{"session_id", `"s-\udc80"`},
		{"session_id", `"s-\ud800x"`},
		{"agent_id", "\"a-\xc3\x28\""},
		{"conversation_id", `"c-\uDFFF"`},
		{"thread-id", "\"t-\xed\xa0\x80\""}, // an encoded surrogate
	} {
		_, err := Parse([]byte(`{"hook_event_name":"Stop",` + `"` + c.field + `":` + c.raw + `}`))
		if !errors.Is(err, adapter.ErrMalformed) || !strings.Contains(err.Error(), c.field+" is not valid UTF-8") {
			t.Errorf("%s %q: err %v, want malformed naming the field", c.field, c.raw, err)
		}
	}
	for _, raw := range []string{`"s-1"`, `"s-\ufffd"`, "\"s-\uFFFD\"", `"s-\ud83d\ude00"`, `"ünïcode"`, `42`} {
		if _, err := Parse([]byte(`{"session_id":` + raw + `}`)); err != nil {
			t.Errorf("%s: %v, want accepted", raw, err)
		}
	}
	// Other fields stay lenient.
	if _, err := Parse([]byte("{\"session_id\":\"s-1\",\"cwd\":\"/tmp/\xff\"}")); err != nil {
		t.Errorf("a non-UTF-8 cwd: %v", err)
	}
}
