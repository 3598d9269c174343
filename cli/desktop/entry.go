// Package desktop reads and tidies Claude Desktop's sidebar of Claude Code
// sessions: one JSON file per entry under
// <dataDir>/claude-code-sessions/<account>/<env>/local_<id>.json. It lists
// the entries with the harn lifecycle of the session each maps to, mirrors
// entries across accounts, and archives entries whose session is done.
//
// Its room is the files only. Lifecycle comes in through the Lifecycles
// interface (the command wires the local node's client); titles are never an
// input to lifecycle. Every write changes only the archive flag or copies a
// whole file, and is atomic (a temp file in the same folder, fsync, rename),
// keeping the file's mode.
package desktop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Errors of this package; match them with errors.Is.
var (
	// ErrDataDir means the data dir (or its claude-code-sessions folder)
	// cannot be read.
	ErrDataDir = errors.New("desktop: Claude Desktop data dir unreadable")
	// ErrMalformed means an entry file is not an entry the app would write.
	ErrMalformed = errors.New("desktop: malformed entry")
	// ErrChanged means an entry file changed between the scan and a write
	// (another session id, or gone); nothing was written.
	ErrChanged = errors.New("desktop: entry changed since it was read")
	// ErrNoDefaultDir means this system has no known default data dir.
	ErrNoDefaultDir = errors.New("desktop: no default Claude Desktop data dir on this system")
)

// Field names in an entry file.
const (
	fieldSessionID = "cliSessionId"
	fieldTitle     = "title"
	fieldCwd       = "cwd"
	fieldArchived  = "isArchived"
)

// Bounds on an entry file.
const (
	// MaxEntryBytes bounds one entry file; the app writes a few hundred
	// bytes.
	MaxEntryBytes = 1 << 20
	// MaxSessionIDLen bounds cliSessionId (a UUID is 36).
	MaxSessionIDLen = 256
)

// Fields are the fields of an entry this package reads. Every other field
// is kept as it is.
type Fields struct {
	CLISessionID string
	Title        string
	Cwd          string
	Archived     bool
}

// MalformedError is an entry file that cannot be used. It matches
// ErrMalformed and its cause, if any.
type MalformedError struct {
	Path   string // "" for bytes not read from a file
	Reason string
	Err    error // the cause, or nil
}

func (e *MalformedError) Error() string {
	msg := "desktop: malformed entry"
	if e.Path != "" {
		msg += " " + e.Path
	}
	msg += ": " + e.Reason
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if e.Path != "" {
		msg += "; fix or remove the file (Claude Desktop recreates its entries)"
	}
	return msg
}

func (e *MalformedError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrMalformed}
	}
	return []error{ErrMalformed, e.Err}
}

func malformed(cause error, format string, args ...any) error {
	return &MalformedError{Reason: fmt.Sprintf(format, args...), Err: cause}
}

// DecodeEntry decodes an entry file's bytes into the fields harn reads and
// the raw object, whose other fields a rewrite keeps. The file must be one
// JSON object; cliSessionId, title and cwd, when present and not null, must
// be strings, and isArchived a boolean. A missing cliSessionId leaves the
// entry unmapped.
func DecodeEntry(b []byte) (Fields, map[string]json.RawMessage, error) {
	var f Fields
	if len(b) > MaxEntryBytes {
		return f, nil, malformed(nil, "%d bytes, more than %d", len(b), MaxEntryBytes)
	}
	if !utf8.Valid(b) {
		return f, nil, malformed(nil, "not UTF-8")
	}
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&obj); err != nil {
		return f, nil, malformed(err, "not a JSON object")
	}
	if obj == nil {
		return f, nil, malformed(nil, "not a JSON object: null")
	}
	if dec.More() {
		return f, nil, malformed(nil, "data after the JSON object")
	}
	str := func(k string, dst *string) error {
		v, ok := obj[k]
		if !ok || isNull(v) {
			return nil
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return malformed(nil, "%s is not a string", k)
		}
		return nil
	}
	for _, fd := range []struct {
		k   string
		dst *string
	}{{fieldSessionID, &f.CLISessionID}, {fieldTitle, &f.Title}, {fieldCwd, &f.Cwd}} {
		if err := str(fd.k, fd.dst); err != nil {
			return Fields{}, nil, err
		}
	}
	if v, ok := obj[fieldArchived]; ok && !isNull(v) {
		if err := json.Unmarshal(v, &f.Archived); err != nil {
			return Fields{}, nil, malformed(nil, "%s is not a boolean", fieldArchived)
		}
	}
	if err := checkSessionID(f.CLISessionID); err != nil {
		return Fields{}, nil, err
	}
	return f, obj, nil
}

func checkSessionID(id string) error {
	if len(id) > MaxSessionIDLen {
		return malformed(nil, "%s is longer than %d bytes", fieldSessionID, MaxSessionIDLen)
	}
	if strings.TrimSpace(id) != id {
		return malformed(nil, "%s has surrounding white space", fieldSessionID)
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f || r == '/' || r == '\\' {
			return malformed(nil, "%s holds a control character or a slash", fieldSessionID)
		}
	}
	return nil
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

// encodeEntry encodes obj the way the file was written: indented with two
// spaces when the original spanned lines, compact otherwise, with a final
// newline when the original had one.
func encodeEntry(obj map[string]json.RawMessage, like []byte) ([]byte, error) {
	var out []byte
	var err error
	if bytes.ContainsRune(bytes.TrimSpace(like), '\n') {
		out, err = json.MarshalIndent(obj, "", "  ")
	} else {
		out, err = json.Marshal(obj)
	}
	if err != nil {
		return nil, err
	}
	if bytes.HasSuffix(like, []byte("\n")) {
		out = append(out, '\n')
	}
	return out, nil
}

// readEntry reads and decodes one entry file, refusing what is not a
// regular file or is oversized.
func readEntry(path string) (Fields, map[string]json.RawMessage, []byte, os.FileMode, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return Fields{}, nil, nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		return Fields{}, nil, nil, 0, &MalformedError{Path: path, Reason: "not a regular file"}
	}
	if fi.Size() > MaxEntryBytes {
		return Fields{}, nil, nil, 0, &MalformedError{Path: path, Reason: fmt.Sprintf("%d bytes, more than %d", fi.Size(), MaxEntryBytes)}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Fields{}, nil, nil, 0, err
	}
	f, obj, err := DecodeEntry(b)
	if err != nil {
		var me *MalformedError
		if errors.As(err, &me) {
			me.Path = path
		}
		return Fields{}, nil, nil, 0, err
	}
	return f, obj, b, fi.Mode().Perm(), nil
}

// writeAtomic writes b to path through a temp file in the same folder:
// write, fsync, chmod to mode, rename, then fsync the folder. A failure
// leaves the old file (or none) and no temp file behind.
func writeAtomic(path string, b []byte, mode os.FileMode) error {
	return writeFile(path, b, mode, true)
}

// writeNew is writeAtomic for a file that must not exist: the temp file is
// linked to path, which fails with ErrExists when path appeared meanwhile.
func writeNew(path string, b []byte, mode os.FileMode) error {
	return writeFile(path, b, mode, false)
}

func writeFile(path string, b []byte, mode os.FileMode, replace bool) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".harn-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(b); err != nil {
		return err
	}
	if err = tmp.Chmod(mode); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if replace {
		err = os.Rename(tmp.Name(), path)
	} else if err = os.Link(tmp.Name(), path); err == nil {
		os.Remove(tmp.Name())
	} else if errors.Is(err, fs.ErrExist) {
		err = fmt.Errorf("%w: %s; run the command again", ErrExists, path)
	}
	if err != nil {
		return err
	}
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
