// Package spool is the hook's fallback when the node is down or slow: each
// record is one file, written to a temp name, fsynced, renamed into place
// and the directory fsynced, so that a hook that exited 0 has put its
// events on disk. The node drains the spool in file-name order (time of
// writing) and removes each file only after its events are durable in the
// ledger.
package spool

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/harn-dev/harn/presence"
)

// Record is one spooled hook invocation.
type Record struct {
	Events     []presence.Event `json:"events,omitempty"`
	Diagnostic *Diagnostic      `json:"diagnostic,omitempty"`
}

// Diagnostic is bad hook input, recorded for `harn node errors`.
type Diagnostic struct {
	TS          time.Time `json:"ts"`
	Source      string    `json:"source"`
	Error       string    `json:"error"`
	InputBytes  int       `json:"input_bytes,omitempty"`
	InputDigest string    `json:"input_digest,omitempty"`
}

const tmpPrefix = ".tmp-"

// Errors.
var (
	// ErrCorrupt marks a spool file that cannot be decoded.
	ErrCorrupt = errors.New("spool: corrupt spool file")
	// ErrUnwritable: a record could not be put on disk. Write returns it
	// as a *WriteError, which says what was lost.
	ErrUnwritable = errors.New("spool: not writable")
	// ErrNoSpace: the disk is full (or over quota); it comes with
	// ErrUnwritable.
	ErrNoSpace = errors.New("spool: disk full")
)

// WriteError is what Write returns when the record did not reach the
// disk: the record is lost unless the caller keeps it. It matches
// ErrUnwritable, ErrNoSpace on a full disk, and the OS error.
type WriteError struct {
	// Dir is the spool directory; Step is what failed (mkdir, create,
	// write, sync, close, rename, dirsync).
	Dir, Step string
	// EventIDs are the ids of the events lost, in order; Diagnostic is
	// true when the record carried a diagnostic.
	EventIDs   []string
	Diagnostic bool
	// NoSpace is true on a full disk (ENOSPC, EDQUOT).
	NoSpace bool
	Cause   error
}

func (e *WriteError) Error() string {
	what := "spool: not writable"
	if e.NoSpace {
		what = "spool: disk full"
	}
	lost := fmt.Sprintf("%d events", len(e.EventIDs))
	if e.Diagnostic {
		lost += " and a diagnostic"
	}
	return fmt.Sprintf("%s: %s lost, %s in %s failed: %v", what, lost, e.Step, e.Dir, e.Cause)
}

// Unwrap gives ErrUnwritable, ErrNoSpace on a full disk, and the cause.
func (e *WriteError) Unwrap() []error {
	errs := []error{ErrUnwritable}
	if e.NoSpace {
		errs = append(errs, ErrNoSpace)
	}
	return append(errs, e.Cause)
}

// Write stores rec durably under dir. name must be unique (an event id).
// A record that does not reach the disk yields a *WriteError (nothing
// of it is left behind); an encoding failure, a plain error.
func Write(dir string, now time.Time, name string, rec Record) (string, error) {
	fail := func(step string, err error) error {
		we := &WriteError{Dir: dir, Step: step, Diagnostic: rec.Diagnostic != nil, Cause: err,
			NoSpace: errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)}
		for _, e := range rec.Events {
			we.EventIDs = append(we.EventIDs, e.ID)
		}
		return we
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return "", fmt.Errorf("spool: encode: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fail("mkdir", err)
	}
	final := filepath.Join(dir, fmt.Sprintf("%020d-%s.json", now.UnixNano(), name))
	tmp := filepath.Join(dir, tmpPrefix+filepath.Base(final))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fail("create", err)
	}
	step := "write"
	_, err = f.Write(b)
	if err == nil {
		step, err = "sync", f.Sync()
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		step, err = "close", cerr
	}
	if err == nil {
		step, err = "rename", os.Rename(tmp, final)
	}
	if err != nil {
		os.Remove(tmp)
		return "", fail(step, err)
	}
	if err := syncDir(dir); err != nil {
		// The record is in place but its directory entry may not survive
		// a crash: report it, and leave the file for the drain.
		return final, fail("dirsync", err)
	}
	return final, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("spool dir sync: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("spool dir sync: %w", err)
	}
	return nil
}

// Pending lists the spool files in order.
func Pending(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("spool list: %w", err)
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || strings.HasPrefix(n, tmpPrefix) || !strings.HasSuffix(n, ".json") {
			continue
		}
		out = append(out, filepath.Join(dir, n))
	}
	sort.Strings(out)
	return out, nil
}

// Read decodes one spool file.
func Read(path string) (Record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Record{}, fmt.Errorf("spool read: %w", err)
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return Record{}, fmt.Errorf("%w %s: %w", ErrCorrupt, filepath.Base(path), err)
	}
	return rec, nil
}

// Remove deletes a drained spool file and syncs the directory.
func Remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("spool remove: %w", err)
	}
	return syncDir(filepath.Dir(path))
}

// Quarantine moves an undecodable file aside so that draining goes on.
func Quarantine(path string) error {
	dir := filepath.Join(filepath.Dir(path), "bad")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.Rename(path, filepath.Join(dir, filepath.Base(path)))
}

// CleanTemps removes temp files older than age: writes that never
// completed, whose hook never exited 0.
func CleanTemps(dir string, now time.Time, age time.Duration) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), tmpPrefix) {
			continue
		}
		if info, err := e.Info(); err == nil && now.Sub(info.ModTime()) > age {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
