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

// ErrCorrupt marks a spool file that cannot be decoded.
var ErrCorrupt = errors.New("corrupt spool file")

// Write stores rec durably under dir. name must be unique (an event id).
func Write(dir string, now time.Time, name string, rec Record) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("spool: %w", err)
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return "", fmt.Errorf("spool encode: %w", err)
	}
	final := filepath.Join(dir, fmt.Sprintf("%020d-%s.json", now.UnixNano(), name))
	tmp := filepath.Join(dir, tmpPrefix+filepath.Base(final))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("spool: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(tmp)
		return "", fmt.Errorf("spool write: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return "", fmt.Errorf("spool sync: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("spool close: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("spool rename: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return "", err
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
		return Record{}, fmt.Errorf("%w %s: %v", ErrCorrupt, filepath.Base(path), err)
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
