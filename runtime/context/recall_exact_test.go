package context

import (
	stdctx "context"
	"fmt"
	"strings"
	"testing"
)

// TestRecallAnswersExactlyTheRangeThenOneTrailerLine: a recall's answer
// is exactly the bytes of the range it names (the range asked for, or the
// head of it that fits), followed by at most one line starting with
// "[recall:"; stored back into the lane as the tool result it is, it fits
// the preview whole, so the model sees it uncut. Recalled piece after
// piece, a 100,001-byte output comes back byte for byte.
func TestRecallAnswersExactlyTheRangeThenOneTrailerLine(t *testing.T) {
	const preview = 1024
	sp := NewSpace(openPebble(t, ""), Options{PreviewBytes: preview})
	l, _ := sp.Open("s1", "")
	full := strings.Repeat("0123456789", 5_000) + "é" + strings.Repeat("abcdefghij", 5_000) // 100,002 bytes
	full = full[:100_001]
	if err := l.Append(user("t1", "go"), call("t1", "c1", "shell", `{}`), result("t1", "c1", full)); err != nil {
		t.Fatal(err)
	}
	b := sp.Recall()
	var got strings.Builder
	n := 0
	for off := 0; off < len(full); n++ {
		if n > 1000 {
			t.Fatal("recall does not advance")
		}
		args := fmt.Sprintf(`{"ref":"out-3","offset":%d}`, off)
		if n%3 == 1 {
			args = fmt.Sprintf(`{"ref":"out-3","offset":%d,"length":%d}`, off, 1<<20) // over the limit
		}
		r, err := b.Run(stdctx.Background(), toolsCall("s1", args))
		if err != nil || r.IsError {
			t.Fatalf("recall %s: %v %q", args, err, r.Content)
		}
		body, trailer, _ := strings.Cut(r.Content, "\n[recall:")
		if strings.Contains(trailer, "\n") || (trailer == "") != (off+len(body) == len(full)) {
			t.Fatalf("recall %s: the answer is not the bytes then at most one [recall: line: trailer %q", args, trailer)
		}
		if full[off:off+len(body)] != body {
			t.Fatalf("recall %s: bytes differ from the range", args)
		}
		// the loop stores the answer as a tool result: the model sees it whole
		id := fmt.Sprintf("r%d", n)
		if err := l.Append(call("t1", id, RecallTool, args), result("t1", id, r.Content)); err != nil {
			t.Fatal(err)
		}
		h := l.History()
		if seen := h[len(h)-1].Text; seen != r.Content || len(seen) > preview {
			t.Fatalf("recall %s: %d bytes answered, the model sees %d (preview %d): cut again", args, len(r.Content), len(seen), preview)
		}
		got.WriteString(body)
		off += len(body)
	}
	if got.String() != full {
		t.Fatalf("recalled %d bytes, not the output's %d byte for byte", got.Len(), len(full))
	}
	// a range that fits is answered exactly, without a trailer at the end
	r, err := b.Run(stdctx.Background(), toolsCall("s1", `{"ref":"out-3","offset":99501,"length":500}`))
	if err != nil || r.Content != full[99501:] {
		t.Fatalf("the last 500 bytes: %v %q", err, r.Content)
	}
	r, err = b.Run(stdctx.Background(), toolsCall("s1", `{"ref":"out-3","offset":5,"length":10}`))
	if err != nil || r.Content != full[5:15]+"\n[recall: bytes 5 to 15 of 100001; ask for offset 15 for more]" {
		t.Fatalf("a range inside: %v %q", err, r.Content)
	}
}
