package tools

import (
	"fmt"
	"os"
	"strings"
)

// Bounds of a preview.
const (
	// previewContext is the unchanged lines shown around a change.
	previewContext = 3
	// maxPreviewLines bounds the lines of one side a preview compares.
	maxPreviewLines = 20_000
)

// Preview is what a write or an edit would change, as a unified diff of
// the file (the write's content against the file as it is, the edit's
// replacement applied to it); "" for other tools. It reads the file as
// the tool would (under the working directory, bounded) and writes
// nothing. An edit of a file that cannot be read previews old_string
// against new_string alone. It is for the operator who approves the call
// and watches it, not for the model.
func (b *Toolbox) Preview(c Call) string {
	switch c.Name {
	case ToolWrite:
		var a writeArgs
		if decodeArgs(c.Args, &a) != nil || a.Path == "" {
			return ""
		}
		before, err := previewRead(c.Dir, a.Path)
		if err != nil {
			return unifiedDiff(a.Path, "", a.Content, false)
		}
		return UnifiedDiff(a.Path, before, a.Content)
	case ToolEdit:
		var a editArgs
		if decodeArgs(c.Args, &a) != nil || a.Path == "" || a.OldString == "" {
			return ""
		}
		before, err := previewRead(c.Dir, a.Path)
		if err != nil || !strings.Contains(before, a.OldString) {
			return unifiedDiff(a.Path, a.OldString, a.NewString, false)
		}
		n := 1
		if a.ReplaceAll {
			n = -1
		}
		return UnifiedDiff(a.Path, before, strings.Replace(before, a.OldString, a.NewString, n))
	}
	return ""
}

// previewRead is a file's text under dir as the file tools see it; "" for
// one that does not exist.
func previewRead(dir, path string) (string, error) {
	p, err := localPath(dir, path)
	if err != nil {
		return "", err
	}
	root, err := openRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	data, err := readBounded(root, p)
	if os.IsNotExist(err) {
		return "", nil
	}
	return string(data), err
}

// UnifiedDiff is a unified diff of before and after, one hunk from the
// first changed line to the last with previewContext lines around it
// (the common head and tail trimmed, as an edit's change is one run of
// lines); "" when they are equal.
func UnifiedDiff(path, before, after string) string {
	return unifiedDiff(path, before, after, true)
}

// SnippetDiff is a unified diff of before and after that are not the
// file's whole text (an edit's old and new strings, a write's content
// against a file that was not read): its hunk names no lines. It is the
// diff an approval shows of an external agent's write, read from the
// call's own input.
func SnippetDiff(path, before, after string) string { return unifiedDiff(path, before, after, false) }

// unifiedDiff is UnifiedDiff; numbered false: before is not the file (a
// snippet, or a file that could not be read), so the hunk names no lines.
func unifiedDiff(path, before, after string, numbered bool) string {
	if before == after {
		return ""
	}
	a, b := splitLines(before), splitLines(after)
	if len(a) > maxPreviewLines || len(b) > maxPreviewLines {
		return fmt.Sprintf("--- a/%s\n+++ b/%s\n@@ %d lines -> %d lines (too long to compare) @@\n", path, path, len(a), len(b))
	}
	head := 0
	for head < len(a) && head < len(b) && a[head] == b[head] {
		head++
	}
	tail := 0
	for tail < len(a)-head && tail < len(b)-head && a[len(a)-1-tail] == b[len(b)-1-tail] {
		tail++
	}
	from := max(head-previewContext, 0)
	toA := min(len(a)-tail+previewContext, len(a))
	toB := min(len(b)-tail+previewContext, len(b))
	var s strings.Builder
	fmt.Fprintf(&s, "--- a/%s\n+++ b/%s\n", path, path)
	if numbered {
		fmt.Fprintf(&s, "@@ -%s +%s @@\n", hunkRange(from, toA-from), hunkRange(from, toB-from))
	} else {
		s.WriteString("@@ (the file's lines are not known) @@\n")
	}
	for _, l := range a[from:head] {
		s.WriteString(" " + l + "\n")
	}
	for _, l := range a[head : len(a)-tail] {
		s.WriteString("-" + l + "\n")
	}
	for _, l := range b[head : len(b)-tail] {
		s.WriteString("+" + l + "\n")
	}
	for _, l := range a[len(a)-tail : toA] {
		s.WriteString(" " + l + "\n")
	}
	return s.String()
}

func hunkRange(from, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", from)
	}
	return fmt.Sprintf("%d,%d", from+1, n)
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
