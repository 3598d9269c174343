package execwire_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/harn-dev/harn/runtime/execwire"
)

func TestParseCommandQuotesWithoutExpanding(t *testing.T) {
	ok := []struct {
		in   string
		want []string
	}{
		{"claude -p", []string{"claude", "-p"}},
		{"  a\t b  ", []string{"a", "b"}},
		{`sh -c 'echo $HOME; ls | wc -l'`, []string{"sh", "-c", "echo $HOME; ls | wc -l"}},
		{`agent --allowedTools "Bash(git *)" x`, []string{"agent", "--allowedTools", "Bash(git *)", "x"}},
		{`a "q\"uote" 'it''s'`, []string{"a", `q"uote`, "its"}},
		{`a b\ c`, []string{"a", "b c"}},
		{`a ""`, []string{"a", ""}},
		{`a b#c d~e`, []string{"a", "b#c", "d~e"}},
	}
	for _, c := range ok {
		got, err := execwire.ParseCommand(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseCommand(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	bad := map[string]error{
		"":            execwire.ErrNoCommand,
		"   ":         execwire.ErrNoCommand,
		"a 'b":        execwire.ErrBadCommand,
		`a "b`:        execwire.ErrBadCommand,
		`a \`:         execwire.ErrBadCommand,
		"a; rm -rf ~": execwire.ErrBadCommand,
		"a | b":       execwire.ErrBadCommand,
		"a > f":       execwire.ErrBadCommand,
		"a $HOME":     execwire.ErrBadCommand,
		"a *.go":      execwire.ErrBadCommand,
		"a\nb":        execwire.ErrBadCommand,
		"a `b`":       execwire.ErrBadCommand,
		"~/bin/agent": execwire.ErrBadCommand,
		"a #comment":  execwire.ErrBadCommand,
		"a \x00":      execwire.ErrBadCommand,
		"a (b)":       execwire.ErrBadCommand,
		"a && b":      execwire.ErrBadCommand,
		"a {b,c}":     execwire.ErrBadCommand,
		"a ?":         execwire.ErrBadCommand,
		"a [x]":       execwire.ErrBadCommand,
		"\"a\nb\"":    execwire.ErrBadCommand,
		strings.Repeat("a ", execwire.MaxCommandWords+1): execwire.ErrBadCommand,
	}
	for in, want := range bad {
		if _, err := execwire.ParseCommand(in); !errors.Is(err, want) {
			t.Errorf("ParseCommand(%q) error %v, want %v", in, err, want)
		}
	}
}

func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{`claude -p`, `sh -c 'a; b'`, `a "b\"c" d\ e`, `a 'b`, `$x`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := execwire.ParseCommand(s)
		if err != nil {
			if !errors.Is(err, execwire.ErrBadCommand) && !errors.Is(err, execwire.ErrNoCommand) {
				t.Fatalf("error %v", err)
			}
			return
		}
		if len(words) == 0 || len(words) > execwire.MaxCommandWords {
			t.Fatalf("%d words", len(words))
		}
		// Quoting each word back gives the same words.
		var b strings.Builder
		for i, w := range words {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString("'" + strings.ReplaceAll(w, "'", `'\''`) + "'")
		}
		again, err := execwire.ParseCommand(b.String())
		if err != nil && !errors.Is(err, execwire.ErrBadCommand) { // may exceed the byte bound
			t.Fatalf("re-parse: %v", err)
		}
		if err == nil && !reflect.DeepEqual(again, words) {
			t.Fatalf("re-parse %q = %q, want %q", b.String(), again, words)
		}
	})
}
