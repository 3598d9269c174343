package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func previewCall(dir, name, args string) Call {
	return Call{ID: "c1", Name: name, Args: json.RawMessage(args), Dir: dir}
}

// TestPreviewDiffsAWriteAgainstTheFileAndAnEditInIt: a write's preview is
// its content against the file as it is (all added for a new file); an
// edit's is its replacement in the file, with the lines around it and
// their numbers; neither writes anything.
func TestPreviewDiffsAWriteAgainstTheFileAndAnEditInIt(t *testing.T) {
	dir := t.TempDir()
	var lines []string
	for i := 1; i <= 20; i++ {
		lines = append(lines, "line "+string(rune('a'+i-1)))
	}
	orig := strings.Join(lines, "\n") + "\n"
	f := filepath.Join(dir, "f.txt")
	os.WriteFile(f, []byte(orig), 0o600)
	b := &Toolbox{}

	w := b.Preview(previewCall(dir, ToolWrite, `{"path":"f.txt","content":"`+strings.ReplaceAll(strings.Replace(orig, "line j", "line J", 1), "\n", `\n`)+`"}`))
	want := "--- a/f.txt\n+++ b/f.txt\n@@ -7,7 +7,7 @@\n line g\n line h\n line i\n-line j\n+line J\n line k\n line l\n line m\n"
	if w != want {
		t.Fatalf("the write's preview:\n%s\nwant\n%s", w, want)
	}
	e := b.Preview(previewCall(dir, ToolEdit, `{"path":"f.txt","old_string":"line b\nline c","new_string":"B"}`))
	if !strings.Contains(e, "@@ -1,6 +1,5 @@\n line a\n-line b\n-line c\n+B\n line d\n") {
		t.Fatalf("the edit's preview:\n%s", e)
	}
	n := b.Preview(previewCall(dir, ToolWrite, `{"path":"new/g.txt","content":"x\ny\n"}`))
	if !strings.Contains(n, "@@ -0,0 +1,2 @@\n+x\n+y\n") {
		t.Fatalf("a new file's preview:\n%s", n)
	}
	if got, _ := os.ReadFile(f); string(got) != orig {
		t.Fatal("a preview changed the file")
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); err == nil {
		t.Fatal("a preview made a folder")
	}
	if p := b.Preview(previewCall(dir, ToolShell, `{"command":"ls"}`)); p != "" {
		t.Fatalf("a shell call has no diff: %q", p)
	}
}

// TestPreviewReadsNothingOutsideTheWorkdir: a write to a path outside the
// working directory, or through a link that leaves it, previews its own
// content only, never the file it names.
func TestPreviewReadsNothingOutsideTheWorkdir(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	secret := filepath.Join(out, "secret.txt")
	os.WriteFile(secret, []byte("the secret\n"), 0o600)
	os.Symlink(secret, filepath.Join(dir, "link.txt"))
	b := &Toolbox{}
	for _, args := range []string{
		`{"path":"` + secret + `","content":"x\n"}`,
		`{"path":"../` + filepath.Base(out) + `/secret.txt","content":"x\n"}`,
		`{"path":"link.txt","content":"x\n"}`,
	} {
		if p := b.Preview(previewCall(dir, ToolWrite, args)); strings.Contains(p, "the secret") {
			t.Fatalf("%s: the preview read outside the workdir:\n%s", args, p)
		}
	}
	if p := b.Preview(previewCall(dir, ToolEdit, `{"path":"link.txt","old_string":"the secret","new_string":"y"}`)); !strings.Contains(p, "lines are not known") {
		t.Fatalf("the edit's preview read through the link:\n%s", p)
	}
}
