package trust

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileAtomicIs0600(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := writeFileAtomic(p, []byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := writeFileAtomic(p, []byte("b")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	ents, _ := os.ReadDir(filepath.Dir(p))
	if string(b) != "b" || mode(t, p) != 0o600 || len(ents) != 1 {
		t.Fatalf("content %q, entries %d", b, len(ents))
	}
}
