package callfacts

import (
	"encoding/json"
	"strings"
	"testing"
)

// BenchmarkOfABashCommand: the facts of a hook's Bash request, as the node
// reads them once per request.
func BenchmarkOfABashCommand(b *testing.B) {
	in := []byte(`{"command":"git push --force-with-lease origin main","description":"push"}`)
	for b.Loop() {
		_ = Of("claude-code", "Bash", in, "/w")
	}
}

// BenchmarkOfAOneMiBWrite: a Write of 1 MiB (the diff is cut at 8 KiB,
// the whole content is still split once).
func BenchmarkOfAOneMiBWrite(b *testing.B) {
	content, _ := json.Marshal(strings.Repeat("0123456789abcdef\n", 1<<16))
	in := []byte(`{"file_path":"/w/big.txt","content":` + string(content) + `}`)
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		_ = Of("claude-code", "Write", in, "/w")
	}
}
