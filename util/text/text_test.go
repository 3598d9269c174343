package text

import (
	"strings"
	"testing"
	"time"
)

func TestSanitizeStripsControls(t *testing.T) {
	cases := map[string]string{
		"plain":                      "plain",
		"a\x1b[31mred\x1b[0m":        "a[31mred[0m",
		"osc\x1b]0;title\x07end":     "osc]0;titleend",
		"cr\roverwrite":              "croverwrite",
		"line\nbreak\ttab":           "line break tab",
		"c1\u009bcsi":                "c1csi",
		"bad\xffutf8":                "bad\ufffdutf8",
		"bidi\u202eevil\u2066x":      "bidievilx",
		"del\x7f":                    "del",
		"Agent Flint – ünïcode ok ✓": "Agent Flint – ünïcode ok ✓",
	}
	for in, want := range cases {
		if got := Sanitize(in); got != want {
			t.Errorf("Sanitize(%q) = %q, want %q", in, got, want)
		}
		for _, r := range Sanitize(in) {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
				t.Errorf("Sanitize(%q) kept control %U", in, r)
			}
		}
	}
}

func TestOneLineClipCell(t *testing.T) {
	if got := OneLine("  a \n\n b\x1b  c "); got != "a b c" {
		t.Errorf("OneLine = %q", got)
	}
	if got := Clip("abcdef", 4); got != "abc…" {
		t.Errorf("Clip = %q", got)
	}
	if got := Clip("abc", 4); got != "abc" {
		t.Errorf("Clip short = %q", got)
	}
	if got := Cell(""); got != "-" {
		t.Errorf("Cell empty = %q", got)
	}
	if got := Cell("a|b\nc"); got != "a/b c" {
		t.Errorf("Cell = %q", got)
	}
}

// TestFirstLineKeepsOnlyTheFirstLineSanitized: an error that quotes
// several lines (or escape sequences) shows one safe line.
func TestFirstLineKeepsOnlyTheFirstLineSanitized(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"\n\n  first  line \nsecond\nthird", "first line"},
		{"a\r\nb", "a"},
		{"red \x1b[31mtext\x1b[0m\tend\nmore", "red [31mtext[0m end"},
		{"bidi \u202eevil\u202c\nx", "bidi evil"},
	} {
		if got := FirstLine(tc.in); got != tc.want {
			t.Errorf("FirstLine(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestAge(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for d, want := range map[time.Duration]string{
		0: "0s", 45 * time.Second: "45s", 12 * time.Minute: "12m", 3 * time.Hour: "3h", 72 * time.Hour: "3d", -time.Minute: "0s",
	} {
		if got := Age(now, now.Add(-d)); got != want {
			t.Errorf("Age(%v) = %q, want %q", d, got, want)
		}
	}
	if Age(now, time.Time{}) != "-" || Ago(now, time.Time{}) != "-" {
		t.Error("zero time must render as -")
	}
	if got := Ago(now, now.Add(-3*time.Minute)); got != "3m ago" {
		t.Errorf("Ago = %q", got)
	}
	if !strings.Contains(Ago(now, now), "just now") {
		t.Error("Ago(now) should be just now")
	}
}

func FuzzSanitize(f *testing.F) {
	f.Add("a\x1b[31m\x07\r\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, r := range Sanitize(s) {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
				t.Fatalf("control %U survived in %q", r, s)
			}
		}
		if l := FirstLine(s); strings.ContainsAny(l, "\r\n\x1b") || l != strings.TrimSpace(l) {
			t.Fatalf("FirstLine(%q) = %q: not one trimmed, safe line", s, l)
		}
	})
}

// TestLinesKeepsLineBreaksAndStripsControls: a command or a diff keeps its
// lines; escape sequences, CR and bidi marks go.
func TestLinesKeepsLineBreaksAndStripsControls(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"a\nb", "a\nb"},
		{"a\r\nb\rc\n\n", "a\nb\nc"},
		{"\x1b[31mred\x1b[0m\n\tx\u202e\u009b", "[31mred[0m\n    x"},
	} {
		if got := Lines(tc.in); got != tc.want {
			t.Errorf("Lines(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCutBytesCutsAtARuneBoundary(t *testing.T) {
	if s, cut := CutBytes("abc", 3); s != "abc" || cut {
		t.Errorf("CutBytes fits = %q %v", s, cut)
	}
	if s, cut := CutBytes("aé", 2); s != "a" || !cut {
		t.Errorf("CutBytes mid-rune = %q %v", s, cut)
	}
}
