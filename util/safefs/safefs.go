// Package safefs is the room of reading a directory's config and
// instruction files as an attacker may have written them: relative to the
// directory and never through a symlink that leads out of it (os.Root,
// and Resolve before each open), never a file with a second name (a hard
// link may name a file elsewhere), never a file inside a directory the
// process denies (the node's data dir), never a FIFO or a device (no
// blocking open), and bounded in size. Both harn and harnd may use it; it
// imports the standard library only.
package safefs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Errors of a refused read. A file that does not exist is fs.ErrNotExist.
var (
	// ErrOutside: the name, or a symlink on its way, leads out of the
	// directory.
	ErrOutside = errors.New("safefs: leads out of its directory")
	// ErrNotRegular: a FIFO, device, socket or folder where a file was
	// expected.
	ErrNotRegular = errors.New("safefs: not a regular file")
	// ErrLinked: a file with more than one name (a hard link).
	ErrLinked = errors.New("safefs: a file with more than one link")
	// ErrTooLarge: a file over the bound its reader gave.
	ErrTooLarge = errors.New("safefs: file too large")
	// ErrDenied: a file inside a denied directory (the node's data dir).
	ErrDenied = errors.New("safefs: inside the node's data dir")
)

// maxLinks bounds the symlinks one Resolve follows (as the kernel's 40).
const maxLinks = 40

// maxDirEntries bounds what ReadDir returns.
const maxDirEntries = 4096

// Dir is an open directory whose files are read without leaving it. It
// is meant to live for one reading (a check, a load): Resolve remembers
// the folders it found on the way. Safe for concurrent use.
type Dir struct {
	root *os.Root
	path string // absolute, its own symlinks resolved

	mu      sync.Mutex
	folders map[string]bool // names Resolve found to be folders, not links
}

// Open opens dir. The directory itself may be reached through a symlink
// (its caller named it); nothing read through it leaves it. A directory
// inside a denied one is refused.
func Open(dir string) (*Dir, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, err
	}
	if isDenied(real) {
		return nil, fmt.Errorf("%w: %s", ErrDenied, dir)
	}
	r, err := os.OpenRoot(real)
	if err != nil {
		return nil, err
	}
	return &Dir{root: r, path: real, folders: map[string]bool{}}, nil
}

// Close closes the directory.
func (d *Dir) Close() error { return d.root.Close() }

// Path is the directory's absolute path, its symlinks resolved.
func (d *Dir) Path() string { return d.path }

// ReadFile reads name (slash or OS separated, relative to d) whole, at
// most max bytes: a regular file with one link, reached without leaving d
// or entering a denied directory.
func (d *Dir) ReadFile(name string, max int64) ([]byte, error) {
	b, _, err := d.read(name, max, false)
	return b, err
}

// ReadFileInfo is ReadFile, with the file's description as opened.
func (d *Dir) ReadFileInfo(name string, max int64) ([]byte, fs.FileInfo, error) {
	return d.read(name, max, false)
}

// ReadHead reads at most the first n bytes of name, as ReadFile reads
// (a longer file is cut, not refused).
func (d *Dir) ReadHead(name string, n int64) ([]byte, error) {
	b, _, err := d.read(name, n, true)
	return b, err
}

func (d *Dir) read(name string, max int64, head bool) ([]byte, fs.FileInfo, error) {
	rel, err := d.Resolve(name)
	if err != nil {
		return nil, nil, err
	}
	if isDenied(filepath.Join(d.path, rel)) {
		return nil, nil, fmt.Errorf("%w: %s", ErrDenied, name)
	}
	f, err := d.root.OpenFile(rel, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%w: %s", ErrNotRegular, name)
	}
	if links(st) > 1 {
		return nil, nil, fmt.Errorf("%w: %s", ErrLinked, name)
	}
	// What was opened is what Resolve found: a name swapped for a
	// symlink in between is refused.
	if lst, err := d.root.Lstat(rel); err != nil || !os.SameFile(st, lst) {
		return nil, nil, fmt.Errorf("%w: %s changed while it was opened", ErrOutside, name)
	}
	if st.Size() > max && !head {
		return nil, nil, fmt.Errorf("%w: %s is %d bytes, over %d", ErrTooLarge, name, st.Size(), max)
	}
	var b bytes.Buffer
	if _, err := b.ReadFrom(io.LimitReader(f, max+1)); err != nil {
		return nil, nil, err
	}
	if head && int64(b.Len()) > max {
		return b.Bytes()[:max], st, nil
	}
	if int64(b.Len()) > max {
		return nil, nil, fmt.Errorf("%w: %s is over %d bytes", ErrTooLarge, name, max)
	}
	return b.Bytes(), st, nil
}

// ReadDir lists the folder name (relative to d), sorted by name, at most
// maxDirEntries entries. Entries are not followed: a symlink is listed as
// one.
func (d *Dir) ReadDir(name string) ([]fs.DirEntry, error) {
	rel, err := d.Resolve(name)
	if err != nil {
		return nil, err
	}
	if isDenied(filepath.Join(d.path, rel)) {
		return nil, fmt.Errorf("%w: %s", ErrDenied, name)
	}
	f, err := d.root.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ents, err := f.ReadDir(maxDirEntries)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	sortEntries(ents)
	return ents, nil
}

// Stat describes name, following the symlinks that stay in d.
func (d *Dir) Stat(name string) (fs.FileInfo, error) {
	rel, err := d.Resolve(name)
	if err != nil {
		return nil, err
	}
	return d.root.Lstat(rel)
}

// Lstat describes name itself (a symlink as a symlink); the folders on its
// way must stay in d.
func (d *Dir) Lstat(name string) (fs.FileInfo, error) {
	dir, base := filepath.Split(filepath.Clean(filepath.FromSlash(name)))
	rel, err := d.Resolve(dir)
	if err != nil {
		return nil, err
	}
	if base == ".." {
		return nil, fmt.Errorf("%w: %s", ErrOutside, name)
	}
	return d.root.Lstat(filepath.Join(rel, base))
}

// Resolve is name relative to d with every symlink on its way followed,
// as long as each stays in d: the path a write to name reaches. Its
// components that do not exist yet are kept as given. A name or a link
// that leads out of d, an absolute name, or over 40 links is ErrOutside.
func (d *Dir) Resolve(name string) (string, error) {
	name = filepath.FromSlash(name)
	if filepath.IsAbs(name) {
		return "", fmt.Errorf("%w: %s is absolute", ErrOutside, name)
	}
	queue := splitPath(name)
	var done []string
	exist, nlinks := 0, 0 // done[:exist] exist; what follows does not (yet)
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", fmt.Errorf("%w: %s", ErrOutside, name)
			}
			done = done[:len(done)-1]
			exist = min(exist, len(done))
			continue
		}
		if len(done) > exist {
			done = append(done, c)
			continue
		}
		cand := filepath.Join(append(append([]string(nil), done...), c)...)
		if len(queue) > 0 && d.folder(cand) {
			done = append(done, c)
			exist = len(done)
			continue
		}
		fi, err := d.root.Lstat(cand)
		if err == nil && fi.IsDir() {
			d.remember(cand)
		}
		switch {
		case errors.Is(err, fs.ErrNotExist):
			done = append(done, c)
			continue
		case err != nil:
			return "", err
		case fi.Mode()&fs.ModeSymlink == 0:
			done = append(done, c)
			exist = len(done)
			continue
		}
		if nlinks++; nlinks > maxLinks {
			return "", fmt.Errorf("%w: %s: over %d symlinks", ErrOutside, name, maxLinks)
		}
		target, err := d.root.Readlink(cand)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			// An absolute link inside d is a name in d; any other leaves.
			r, err := filepath.Rel(d.path, filepath.Clean(target))
			if err != nil || !filepath.IsLocal(r) {
				return "", fmt.Errorf("%w: %s links to %s", ErrOutside, name, target)
			}
			queue = append(splitPath(r), queue...)
			done, exist = done[:0], 0
			continue
		}
		queue = append(splitPath(target), queue...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	return filepath.Join(done...), nil
}

func (d *Dir) folder(name string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.folders[name]
}

func (d *Dir) remember(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.folders) < maxDirEntries {
		d.folders[name] = true
	}
}

func splitPath(p string) []string {
	return strings.Split(filepath.ToSlash(p), "/")
}

// ReadFile opens dir and reads name in it (Dir.ReadFile).
func ReadFile(dir, name string, max int64) ([]byte, error) {
	d, err := Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.ReadFile(name, max)
}

// denied are the directories no read of this process enters (the node's
// data dir), absolute with their symlinks resolved.
var denied struct {
	mu   sync.RWMutex
	dirs map[string]int
}

// Deny makes every read of this process refuse dir and what is in it,
// until the returned func is called. A node denies its data dir for as
// long as it is open.
func Deny(dir string) (undo func()) {
	p, err := filepath.Abs(dir)
	if err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
	}
	denied.mu.Lock()
	if denied.dirs == nil {
		denied.dirs = map[string]int{}
	}
	denied.dirs[p]++
	denied.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			denied.mu.Lock()
			if denied.dirs[p]--; denied.dirs[p] <= 0 {
				delete(denied.dirs, p)
			}
			denied.mu.Unlock()
		})
	}
}

// Denied reports whether path (absolute, symlinks resolved) is a denied
// directory or inside one.
func Denied(path string) bool { return isDenied(path) }

func isDenied(p string) bool {
	denied.mu.RLock()
	defer denied.mu.RUnlock()
	for d := range denied.dirs {
		if p == d || strings.HasPrefix(p, strings.TrimSuffix(d, string(filepath.Separator))+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

func sortEntries(ents []fs.DirEntry) {
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
}
