package cli

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/harn-dev/harn/cli/hook"
)

// FuzzReadPayload: the hook's stdin reader returns either one valid JSON
// value or a prefix of its input, never more than max bytes.
func FuzzReadPayload(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":1} trailing`, `garbage`, ``, `{"a":`, `[1,2]`, ` "s" `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		const max = 256
		got := hook.ReadPayload(bytes.NewReader(in), max, time.Second)
		if len(got) > max {
			t.Fatalf("read %d bytes; max %d", len(got), max)
		}
		if !json.Valid(got) && !bytes.HasPrefix(in, got) {
			t.Fatalf("%q is neither a JSON value nor a prefix of %q", got, in)
		}
	})
}

// FuzzGitFiles: reading HEAD and config never panics and names nothing
// longer than the input.
func FuzzGitFiles(f *testing.F) {
	f.Add([]byte("ref: refs/heads/main\n"), []byte("[remote \"origin\"]\n\turl = git@h:a/b.git\n"))
	f.Add([]byte("0123abcd\n"), []byte("[remote \"origin\"\nurl\n= x"))
	f.Fuzz(func(t *testing.T, head, cfg []byte) {
		if b := hook.BranchOf(head); len(b) > len(head) {
			t.Fatalf("branch %q from %q", b, head)
		}
		if n := hook.RepoNameOfURL(hook.OriginURL(cfg)); len(n) > len(cfg) {
			t.Fatalf("repo %q from %q", n, cfg)
		}
	})
}
