package tools

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"encoding/json"

	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/util/safefs"
)

type readArgs struct {
	Path   string `json:"path"`
	Offset int    `json:"offset"`
	Limit  int    `json:"limit"`
}

func (b *Toolbox) runRead(dir string, raw json.RawMessage) (string, error) {
	var a readArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	if a.Path == "" || a.Offset < 0 || a.Limit < 0 {
		return "", fmt.Errorf("%w: read needs a path, and offset and limit >= 1 when given", ErrBadArgs)
	}
	p, err := localPath(dir, a.Path)
	if err != nil {
		return "", err
	}
	root, err := openRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	f, err := root.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return "", fmt.Errorf("%w: %s is a folder; use glob to list it", ErrBadArgs, a.Path)
	}
	off, lim := max(a.Offset, 1), a.Limit
	if lim == 0 {
		lim = defaultReadLines
	}
	var out strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n, shown := 0, 0
	for sc.Scan() {
		n++
		if n < off {
			continue
		}
		if shown == lim || out.Len() > b.maxOut {
			fmt.Fprintf(&out, "[more lines after line %d: read again with offset %d]\n", n-1, n)
			break
		}
		line := sc.Bytes()
		if bytes.IndexByte(line, 0) >= 0 {
			return "", fmt.Errorf("%w: %s looks binary", ErrBadArgs, a.Path)
		}
		fmt.Fprintf(&out, "%6d\t%s\n", n, line)
		shown++
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("read %s: %w", a.Path, err)
	}
	if shown == 0 && n > 0 && off > n {
		return fmt.Sprintf("[%s has %d lines; offset %d is past the end]", a.Path, n, off), nil
	}
	return out.String(), nil
}

type writeArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

func (b *Toolbox) runWrite(dir string, raw json.RawMessage) (string, error) {
	var a writeArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	if a.Path == "" {
		return "", fmt.Errorf("%w: write needs a path", ErrBadArgs)
	}
	p, err := localPath(dir, a.Path)
	if err != nil {
		return "", err
	}
	if p == "." {
		return "", fmt.Errorf("%w: write needs a file path, not the working directory", ErrBadArgs)
	}
	if err := guard(dir, p); err != nil {
		return "", err
	}
	root, err := openRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	if d := filepath.Dir(p); d != "." {
		if err := root.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
	}
	if err := writeFile(root, p, []byte(a.Content)); err != nil {
		return "", err
	}
	return fmt.Sprintf("wrote %d bytes to %s", len(a.Content), a.Path), nil
}

// guard refuses a write to p (relative to dir) that reaches a protected
// path (runtime.ProtectedPath) by another name: a symlink, or a folder
// symlinked inside the working directory, must not carry a write into
// .git/hooks. A protected path written by its own name reached the tool
// only through a grant naming it, confirmed (the runtime's protected_path
// check). A symlink out of the working directory is refused too.
func guard(dir, p string) error {
	d, err := safefs.Open(dir)
	if err != nil {
		return fmt.Errorf("%w: working directory: %v", ErrConfig, err)
	}
	defer d.Close()
	real, err := d.Resolve(p)
	if errors.Is(err, safefs.ErrOutside) {
		return fmt.Errorf("%w: %s (a symlink on its way leads out of %s)", ErrOutsideWorkdir, p, dir)
	}
	if err != nil {
		return err
	}
	if prot, ok := runtime.ProtectedPath(real); ok && real != filepath.Clean(p) {
		return fmt.Errorf("%w: %s leads to %s, under %s; a protected path is written only by its own name, which a grant must name with confirm", ErrProtected, p, real, prot)
	}
	return nil
}

// writeFile replaces a file through a temporary file and a rename, keeping
// the mode of the file it replaces.
func writeFile(root *os.Root, p string, data []byte) error {
	mode := fs.FileMode(0o644)
	if st, err := root.Stat(p); err == nil {
		if st.IsDir() {
			return fmt.Errorf("%w: %s is a folder", ErrBadArgs, p)
		}
		mode = st.Mode().Perm()
	}
	tmp := filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".harn-tmp")
	if err := root.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	if err := root.Rename(tmp, p); err != nil {
		_ = root.Remove(tmp)
		return err
	}
	return nil
}

type editArgs struct {
	Path       string `json:"path"`
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
}

func (b *Toolbox) runEdit(dir string, raw json.RawMessage) (string, error) {
	var a editArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	if a.Path == "" || a.OldString == "" {
		return "", fmt.Errorf("%w: edit needs a path and a non-empty old_string", ErrBadArgs)
	}
	if a.OldString == a.NewString {
		return "", fmt.Errorf("%w: old_string and new_string are the same", ErrBadArgs)
	}
	p, err := localPath(dir, a.Path)
	if err != nil {
		return "", err
	}
	if err := guard(dir, p); err != nil {
		return "", err
	}
	root, err := openRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	data, err := readBounded(root, p)
	if err != nil {
		return "", err
	}
	n := strings.Count(string(data), a.OldString)
	switch {
	case n == 0:
		return "", fmt.Errorf("%w in %s; read the file and copy the text exactly", ErrNoMatch, a.Path)
	case n > 1 && !a.ReplaceAll:
		return "", fmt.Errorf("%w (%d times) in %s; add context to make it unique, or set replace_all", ErrAmbiguous, n, a.Path)
	}
	out := strings.Replace(string(data), a.OldString, a.NewString, -1)
	if err := writeFile(root, p, []byte(out)); err != nil {
		return "", err
	}
	return fmt.Sprintf("replaced %d occurrence(s) in %s", n, a.Path), nil
}

func readBounded(root *os.Root, p string) ([]byte, error) {
	st, err := root.Stat(p)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%w: %s is a folder", ErrBadArgs, p)
	}
	if st.Size() > maxFileBytes {
		return nil, fmt.Errorf("%w: %s is %d bytes, over %d", ErrBadArgs, p, st.Size(), maxFileBytes)
	}
	return root.ReadFile(p)
}

// skipDir names folders the walks of grep and glob never enter.
func skipDir(name string) bool {
	return name == ".git" || name == "node_modules" || name == ".hg" || name == ".svn"
}

// walk visits the regular files under p (relative to root), in lexical
// order, at most maxWalkEntries entries; fn returns false to stop.
func walk(root *os.Root, p string, fn func(rel string) bool) error {
	n := 0
	stop := errors.New("stop")
	err := fs.WalkDir(root.FS(), filepath.ToSlash(p), func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			if rel == filepath.ToSlash(p) {
				return err
			}
			return nil // an unreadable entry is skipped
		}
		n++
		if n > maxWalkEntries {
			return stop
		}
		if d.IsDir() {
			if rel != filepath.ToSlash(p) && skipDir(d.Name()) {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if !fn(rel) {
			return stop
		}
		return nil
	})
	if errors.Is(err, stop) {
		return nil
	}
	return err
}

type grepArgs struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path"`
	Glob       string `json:"glob"`
	IgnoreCase bool   `json:"ignore_case"`
	MaxResults int    `json:"max_results"`
}

func (b *Toolbox) runGrep(dir string, raw json.RawMessage) (string, error) {
	var a grepArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	if a.Pattern == "" || len(a.Pattern) > 4096 {
		return "", fmt.Errorf("%w: grep needs a pattern of 1 to 4096 bytes", ErrBadArgs)
	}
	if a.Glob != "" {
		if err := checkGlob(a.Glob); err != nil {
			return "", err
		}
	}
	expr := a.Pattern
	if a.IgnoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return "", fmt.Errorf("%w: pattern: %v", ErrBadArgs, err)
	}
	p, err := localPath(dir, a.Path)
	if err != nil {
		return "", err
	}
	limit := maxGrepResults
	if a.MaxResults > 0 && a.MaxResults < limit {
		limit = a.MaxResults
	}
	root, err := openRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	var out strings.Builder
	hits := 0
	err = walk(root, p, func(rel string) bool {
		if a.Glob != "" && !matchGlob(a.Glob, path.Base(rel)) && !matchGlob(a.Glob, rel) {
			return true
		}
		data, err := readBounded(root, filepath.FromSlash(rel))
		if err != nil || bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 {
			return true // unreadable, too big or binary
		}
		for i, line := range strings.Split(string(data), "\n") {
			if re.MatchString(line) {
				fmt.Fprintf(&out, "%s:%d:%s\n", rel, i+1, clipLine(line))
				hits++
				if hits >= limit || out.Len() > b.maxOut {
					fmt.Fprintf(&out, "[stopped after %d matches]\n", hits)
					return false
				}
			}
		}
		return true
	})
	if err != nil {
		return "", err
	}
	if hits == 0 {
		return "no matches", nil
	}
	return out.String(), nil
}

func clipLine(s string) string {
	if len(s) > 500 {
		return bound(s, 500)
	}
	return s
}

type globArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
}

func (b *Toolbox) runGlob(dir string, raw json.RawMessage) (string, error) {
	var a globArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	if a.Pattern == "" || len(a.Pattern) > 4096 {
		return "", fmt.Errorf("%w: glob needs a pattern of 1 to 4096 bytes", ErrBadArgs)
	}
	if err := checkGlob(a.Pattern); err != nil {
		return "", err
	}
	p, err := localPath(dir, a.Path)
	if err != nil {
		return "", err
	}
	root, err := openRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	base := filepath.ToSlash(p)
	var hits []string
	more := false
	err = walk(root, p, func(rel string) bool {
		r := rel
		if base != "." {
			r = strings.TrimPrefix(rel, base+"/")
		}
		if matchGlob(a.Pattern, r) {
			if len(hits) == maxGlobResults {
				more = true
				return false
			}
			hits = append(hits, rel)
		}
		return true
	})
	if err != nil {
		return "", err
	}
	if len(hits) == 0 {
		return "no files match", nil
	}
	sort.Strings(hits)
	s := strings.Join(hits, "\n") + "\n"
	if more {
		s += fmt.Sprintf("[first %d files shown]\n", maxGlobResults)
	}
	return s, nil
}

// checkGlob refuses a malformed glob, and one with so many ** that
// matching it could take long.
func checkGlob(p string) error {
	if _, err := path.Match(strings.ReplaceAll(p, "**", "*"), ""); err != nil {
		return fmt.Errorf("%w: glob %q: %v", ErrBadArgs, p, err)
	}
	if strings.Count(p, "**") > 4 {
		return fmt.Errorf("%w: glob %q has more than four **", ErrBadArgs, p)
	}
	return nil
}

// matchGlob matches a slash path against a pattern where ** crosses
// folders and every other element follows path.Match within one segment.
func matchGlob(pattern, name string) bool {
	return matchSegs(strings.Split(pattern, "/"), strings.Split(name, "/"))
}

func matchSegs(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for len(pat) > 1 && pat[1] == "**" {
				pat = pat[1:]
			}
			if len(pat) == 1 {
				return true
			}
			for i := 0; i <= len(segs); i++ {
				if matchSegs(pat[1:], segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, err := path.Match(pat[0], segs[0]); err != nil || !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}
