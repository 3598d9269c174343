package tools

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzDecodeArgs feeds model-supplied arguments to the decoder of every
// core and discovery tool: it never panics, and what it accepts is one
// JSON object (or empty or null) that re-encodes.
func FuzzDecodeArgs(f *testing.F) {
	for _, s := range []string{`{}`, `null`, ``, `{"path":"a.txt","offset":2}`, `{"command":"ls","timeout_ms":5}`,
		`{"path":"a","old_string":"x","new_string":"y","replace_all":true}`, `{"pattern":"a.*b","ignore_case":true}`,
		`[1]`, `{"path":1}`, `{"x":1}`, `{} {}`, `{"name":"\u0000"}`, `{"path":"` + string([]byte{0xff}) + `"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		targets := []any{&readArgs{}, &writeArgs{}, &editArgs{}, &shellArgs{}, &grepArgs{}, &globArgs{}, &listArgs{}, &nameArgs{}}
		for _, v := range targets {
			if err := decodeArgs(raw, v); err != nil {
				continue
			}
			tr := bytes.TrimSpace(raw)
			if len(tr) > 0 && !bytes.Equal(tr, []byte("null")) && (tr[0] != '{' || !json.Valid(tr)) {
				t.Fatalf("accepted %q", raw)
			}
			if _, err := json.Marshal(v); err != nil {
				t.Fatalf("re-encode %q: %v", raw, err)
			}
		}
	})
}
