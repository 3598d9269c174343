package desktop

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// SessionsDir is the folder of the data dir that holds the entries.
const SessionsDir = "claude-code-sessions"

// DefaultDataDir is Claude Desktop's data dir for goos and the home dir:
// ~/Library/Application Support/Claude on macOS, ~/.config/Claude on Linux
// (or $XDG_CONFIG_HOME/Claude when xdgConfig is set).
func DefaultDataDir(goos, home, xdgConfig string) (string, error) {
	switch goos {
	case "darwin":
		if home == "" {
			break
		}
		return filepath.Join(home, "Library", "Application Support", "Claude"), nil
	case "linux":
		if xdgConfig != "" && filepath.IsAbs(xdgConfig) {
			return filepath.Join(xdgConfig, "Claude"), nil
		}
		if home == "" {
			break
		}
		return filepath.Join(home, ".config", "Claude"), nil
	}
	return "", fmt.Errorf("%w (%s); pass --data-dir with the folder that holds %s", ErrNoDefaultDir, goos, SessionsDir)
}

// DataDirError is a data dir, or its sessions folder, that cannot be read.
// It matches ErrDataDir and its cause.
type DataDirError struct {
	Path string
	Err  error
}

func (e *DataDirError) Error() string {
	return fmt.Sprintf("desktop: cannot read Claude Desktop data dir %s: %v; pass --data-dir with the folder that holds %s",
		e.Path, e.Err, SessionsDir)
}

func (e *DataDirError) Unwrap() []error { return []error{ErrDataDir, e.Err} }

// Entry is one sidebar entry file.
type Entry struct {
	Fields
	Account string // the account folder
	Env     string // the folder under the account
	Name    string // the file's base name, local_<id>.json
	Path    string
	Mode    os.FileMode
	ModTime time.Time
}

// Account is an account folder and its env folders, sorted.
type Account struct {
	Name string
	Envs []string
}

// Tree is what Scan found under a data dir.
type Tree struct {
	Dir      string
	Accounts []Account // sorted by name
	Entries  []Entry   // sorted by account, env, name
	// Warnings are the files and folders skipped: *MalformedError for an
	// entry that cannot be used, *DataDirError for a folder that cannot be
	// read.
	Warnings []error
}

// isEntryName reports a sidebar entry's file name: local_<id>.json.
func isEntryName(name string) bool {
	return strings.HasPrefix(name, "local_") && strings.HasSuffix(name, ".json") && len(name) > len("local_.json")
}

// Scan reads every entry under dir/claude-code-sessions. A data dir that
// cannot be read is an error (a *DataDirError); a missing sessions folder is
// an empty tree; a malformed entry or an unreadable sub-folder is skipped
// and listed in Warnings.
func Scan(dir string) (*Tree, error) {
	t := &Tree{Dir: dir}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, &DataDirError{Path: dir, Err: err}
	}
	if !fi.IsDir() {
		return nil, &DataDirError{Path: dir, Err: errors.New("not a directory")}
	}
	root := filepath.Join(dir, SessionsDir)
	accts, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		if _, derr := os.ReadDir(dir); derr != nil {
			return nil, &DataDirError{Path: dir, Err: derr}
		}
		return t, nil
	}
	if err != nil {
		return nil, &DataDirError{Path: root, Err: err}
	}
	for _, a := range accts {
		if !a.IsDir() {
			continue
		}
		acct := Account{Name: a.Name()}
		adir := filepath.Join(root, a.Name())
		envs, err := os.ReadDir(adir)
		if err != nil {
			t.Warnings = append(t.Warnings, &DataDirError{Path: adir, Err: err})
			continue
		}
		for _, e := range envs {
			if !e.IsDir() {
				continue
			}
			acct.Envs = append(acct.Envs, e.Name())
			t.scanEnv(acct.Name, e.Name(), filepath.Join(adir, e.Name()))
		}
		t.Accounts = append(t.Accounts, acct)
	}
	sort.Slice(t.Accounts, func(i, j int) bool { return t.Accounts[i].Name < t.Accounts[j].Name })
	sort.Slice(t.Entries, func(i, j int) bool { return t.Entries[i].Path < t.Entries[j].Path })
	return t, nil
}

func (t *Tree) scanEnv(acct, env, edir string) {
	files, err := os.ReadDir(edir)
	if err != nil {
		t.Warnings = append(t.Warnings, &DataDirError{Path: edir, Err: err})
		return
	}
	for _, f := range files {
		if f.IsDir() || !isEntryName(f.Name()) {
			continue
		}
		p := filepath.Join(edir, f.Name())
		fields, _, _, mode, err := readEntry(p)
		if err != nil {
			var me *MalformedError
			if !errors.As(err, &me) {
				err = &MalformedError{Path: p, Reason: "cannot be read", Err: err}
			}
			t.Warnings = append(t.Warnings, err)
			continue
		}
		var mt time.Time
		if fi, err := f.Info(); err == nil {
			mt = fi.ModTime()
		}
		t.Entries = append(t.Entries, Entry{Fields: fields, Account: acct, Env: env, Name: f.Name(),
			Path: p, Mode: mode, ModTime: mt})
	}
}

// Rel is the entry's path under the sessions folder: account/env/name.
func (e Entry) Rel() string { return e.Account + "/" + e.Env + "/" + e.Name }
