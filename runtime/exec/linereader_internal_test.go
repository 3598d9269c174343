package exec

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func readAll(t *testing.T, in []byte) (lines []string, long int) {
	t.Helper()
	lr := newLineReader(bytes.NewReader(in))
	for i := 0; i < len(in)+2; i++ {
		l, err := lr.next()
		switch {
		case errors.Is(err, ErrLineLong):
			long++
		case errors.Is(err, io.EOF):
			return lines, long
		case err != nil:
			t.Fatal(err)
		default:
			if len(l) > MaxLineBytes {
				t.Fatalf("line of %d bytes", len(l))
			}
			lines = append(lines, string(l))
		}
	}
	t.Fatal("the reader did not end")
	return nil, 0
}

func TestLineReaderSkipsOverlongLinesAndKeepsTheRest(t *testing.T) {
	in := "a\r\n" + strings.Repeat("x", MaxLineBytes+10) + "\nb\n" + strings.Repeat("y", MaxLineBytes) + "\nlast"
	lines, long := readAll(t, []byte(in))
	if long != 1 || len(lines) != 4 || lines[0] != "a" || lines[1] != "b" || len(lines[2]) != MaxLineBytes || lines[3] != "last" {
		t.Fatalf("lines %d (%q…), long %d", len(lines), lines[0], long)
	}
}

func FuzzLineReader(f *testing.F) {
	f.Add([]byte("a\nb\r\n\nc"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, in []byte) {
		lines, long := readAll(t, in)
		if long != 0 {
			t.Fatalf("short input gave %d long lines", long)
		}
		want := strings.Split(strings.TrimSuffix(string(in), "\n"), "\n")
		if len(in) == 0 {
			want = nil
		}
		if len(lines) != len(want) {
			t.Fatalf("%d lines, want %d", len(lines), len(want))
		}
	})
}
