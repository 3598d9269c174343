package hosted

import (
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/presence"
)

// TestPeekIsTheLastLinesOfTheScreenStripped: a peek is at most PeekLines
// non-blank lines from the bottom of the screen, each at most PeekChars,
// with no control character; while the session waits for input, a new
// screen republishes its row (OnChange), at most every peekEvery.
func TestPeekIsTheLastLinesOfTheScreenStripped(t *testing.T) {
	changed := make(chan string, 16)
	r, sk := newRoom(t, func(c *Config) { c.OnChange = func(s string) { changed <- s } })
	script := `printf '\033]0;title\007line one\r\n'; i=0; while [ $i -lt 10 ]; do printf 'row %s\r\n' $i; i=$((i+1)); done; ` +
		`printf '%0300d\r\n' 7; printf 'Allow \033[31mBash\033[0m? [y/n]'; read x; printf '\r\nnext question\r\n'; sleep 30`
	in, err := r.Start(Spec{Agent: "shell", Name: "ask", Argv: []string{"/bin/sh", "-c", script}, Dir: t.TempDir(), Rows: 40, Cols: 400})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "drawn", func() bool {
		return len(r.Peek(in.ID)) > 0 && strings.Contains(strings.Join(r.Peek(in.ID), ""), "Allow")
	})
	p := r.Peek(in.ID)
	if len(p) != PeekLines || p[len(p)-1] != "Allow Bash? [y/n]" || p[0] != "row 6" || len([]rune(p[4])) != PeekChars {
		t.Fatalf("peek %q", p)
	}
	for _, l := range p {
		if len([]rune(l)) > PeekChars || strings.ContainsAny(l, "\x1b\x07\r\n") {
			t.Fatalf("an unbounded or unstripped line: %q", l)
		}
	}
	sk.Ingest([]presence.Event{{SessionID: in.ID, Type: presence.TypeInputRequested, TS: time.Now()}})
	if _, err := r.Steer(in.ID, "y", "op"); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-changed:
		if s != in.ID {
			t.Fatalf("changed %q", s)
		}
	case <-time.After(bound):
		t.Fatal("a new screen of a waiting session did not republish its row")
	}
}
