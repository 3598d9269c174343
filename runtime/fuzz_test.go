package runtime

import (
	"reflect"
	"testing"
)

func FuzzParseGrants(f *testing.F) {
	f.Add([]byte("profile read-only\nexecute Bash(git *)\nexecute Edit(src/**) confirm\nactivate review\n# c\n"))
	f.Add([]byte(`{"version":1,"profile":"edit","grants":[{"level":"execute","capability":"Bash","match":"npm run test:*","confirm":true}]}`))
	f.Add([]byte("execute Bash(echo (x)) confirm"))
	f.Add([]byte("inspect Bash(git *)"))
	f.Add([]byte("load\tmcp__*"))
	f.Fuzz(func(t *testing.T, b []byte) {
		gs, err := ParseGrants(b)
		if err != nil {
			return
		}
		for _, g := range gs {
			if err := g.validate(); err != nil {
				t.Fatalf("ParseGrants accepted an invalid grant %+v: %v", g, err)
			}
		}
		back, err := ParseGrants(FormatGrants(gs))
		if err != nil {
			t.Fatalf("formatted grants do not parse: %v\n%s", err, FormatGrants(gs))
		}
		if !reflect.DeepEqual(back, gs) {
			t.Fatalf("round trip changed the grants\n got %+v\nwant %+v", back, gs)
		}
	})
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add([]byte(`{"v":1,"seq":3,"ts":"2026-08-12T10:00:00Z","session":"s","task":"t","kind":"call.end","call":"c1","capability":"Bash","status":"succeeded","output":"0123456789abcdef0123456789abcdef"}`))
	f.Add([]byte(`{"v":1,"seq":1,"ts":"2026-08-12T10:00:00.5Z","task":"t","kind":"task.state","state":"quiescing","status":"cancelled"}`))
	f.Add([]byte(`{"v":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRecord(b)
		if err != nil {
			return
		}
		enc, err := EncodeRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeRecord(enc)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", enc, err)
		}
		if !back.TS.Equal(r.TS) {
			t.Fatalf("ts %v became %v", r.TS, back.TS)
		}
		back.TS = r.TS
		if back != r {
			t.Fatalf("round trip changed the record\n got %+v\nwant %+v", back, r)
		}
	})
}

// FuzzSubjectMatch feeds agent tool input and grant patterns: no panic,
// and a command holding a shell operator never matches a pattern.
func FuzzSubjectMatch(f *testing.F) {
	f.Add(uint8(SubjectCommand), []byte(`{"command":"git status"}`), "git *", "/w")
	f.Add(uint8(SubjectPath), []byte(`{"file_path":"/w/src/a.go"}`), "src/**", "/w")
	f.Add(uint8(SubjectPath), []byte(`{"path":"../x"}`), "/**", "")
	f.Add(uint8(SubjectText), []byte(`{"url":"https://x"}`), "https://*", "")
	f.Fuzz(func(t *testing.T, kind uint8, input []byte, pattern, workdir string) {
		s := Subject(kind % 4)
		subj := SubjectOf(s, input)
		ok := matchSubject(pattern, subj, s, workdir)
		if ok && s == SubjectCommand && containsAny(subj, shellOps) {
			t.Fatalf("command %q with a shell operator matched %q", subj, pattern)
		}
		_ = nameMatch(pattern, subj)
	})
}

func containsAny(s, chars string) bool {
	for i := 0; i < len(s); i++ {
		for j := 0; j < len(chars); j++ {
			if s[i] == chars[j] {
				return true
			}
		}
	}
	return false
}

func TestGlobMatch(t *testing.T) {
	cases := []struct {
		pat, s string
		paths  bool
		want   bool
	}{
		{"git *", "git status", false, true},
		{"git *", "git", false, false},
		{"*", "", false, true},
		{"a*b*c", "axxbyyc", false, true},
		{"a*b*c", "axxbyy", false, false},
		{"/w/src/**", "/w/src/a/b.go", true, true},
		{"/w/src/*", "/w/src/a/b.go", true, false},
		{"/w/src/*.go", "/w/src/b.go", true, true},
		{"/w/?.go", "/w/a.go", true, true},
		{"/w/?.go", "/w//.go", true, false},
		{"mcp__github__*", "mcp__github__x", false, true},
	}
	for _, c := range cases {
		if got := globMatch(c.pat, c.s, c.paths); got != c.want {
			t.Errorf("globMatch(%q, %q, %v) = %v", c.pat, c.s, c.paths, got)
		}
	}
}
