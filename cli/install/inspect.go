package install

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Status is what an agent's settings file holds of harn's hooks.
type Status struct {
	Path string
	// FileExists and DirExists say whether the settings file and its
	// folder (the agent's config folder) exist.
	FileExists, DirExists bool
	// Missing lists the events harn registers that have no harn entry.
	Missing []string
	// Hooks are harn's entries, in file order.
	Hooks []HookRef
}

// HookRef is one harn entry of a settings file: its event, its place
// (matcher group and handler index; a flat file's entries are groups of
// one) and its command.
type HookRef struct {
	Event          string
	Group, Handler int
	Command        string
	// Timeout is the agent's kill limit for the hook: the entry's
	// timeout, else the agent's default (0 when that is not known).
	Timeout time.Duration
	// Wait is the longest the command's hook may wait at this event (a
	// remote approval, a confirmation); 0 when it never waits.
	Wait time.Duration
}

// TooShort reports whether the agent would kill the hook before its wait
// ends (the timeout does not exceed the wait), which loses its answer.
func (h HookRef) TooShort() bool { return h.Wait > 0 && h.Timeout > 0 && h.Timeout <= h.Wait }

// WantTimeout is the timeout harn writes for h: its wait plus the margin.
func (h HookRef) WantTimeout() time.Duration { return h.Wait + TimeoutMargin }

// Inspect reads an agent's settings file and reports harn's entries; it
// never writes. A missing file is a Status with FileExists false.
func Inspect(o Options) (Status, error) {
	path, err := Path(o)
	if err != nil {
		return Status{}, err
	}
	st := Status{Path: path}
	if fi, err := os.Stat(filepath.Dir(path)); err == nil && fi.IsDir() {
		st.DirExists = true
	}
	spec := specs()[o.Agent]
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		st.Missing = append([]string(nil), spec.events...)
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("reading %s: %w", path, err)
	}
	st.FileExists = true
	if spec.jsonc {
		if b, _, err = stripComments(b); err != nil {
			return st, fmt.Errorf("%w: %s: %w", ErrBadSettings, path, err)
		}
	}
	top, err := parseSettings(b)
	if err != nil {
		return st, fmt.Errorf("%w: %s: %w", ErrBadSettings, path, err)
	}
	hooks, _, err := hooksOf(top)
	if err != nil {
		return st, fmt.Errorf("%w: %s: %w", ErrBadSettings, path, err)
	}
	for _, m := range hooks {
		list, err := array(m.val, true)
		if err != nil {
			continue
		}
		for gi, item := range list {
			hs := []json.RawMessage{item}
			if !spec.flat {
				group, err := parseObject(item)
				if err != nil {
					continue
				}
				raw, ok := group.get("hooks")
				if hs, err = array(raw, ok); err != nil {
					continue
				}
			}
			for hi, h := range hs {
				o, err := parseObject(h)
				if err != nil {
					continue
				}
				if cmd := stringField(o, "command"); isHarn(cmd, spec.name) {
					ref := HookRef{Event: m.key, Group: gi, Handler: hi, Command: cmd, Wait: spec.waitOf(m.key, cmd), Timeout: spec.defaultTimeout}
					if n, ok := numberField(o, "timeout"); ok {
						ref.Timeout = time.Duration(n * float64(spec.unit))
					}
					st.Hooks = append(st.Hooks, ref)
				}
			}
		}
	}
	for _, ev := range spec.events {
		found := false
		for _, h := range st.Hooks {
			found = found || h.Event == ev
		}
		if !found {
			st.Missing = append(st.Missing, ev)
		}
	}
	return st, nil
}

// CommandBinary is the binary a hook command runs: the inverse of the
// quoting harn writes ("/a b/harn" hook x, or /usr/bin/harn hook x).
func CommandBinary(cmd string) string {
	cmd = strings.TrimSpace(cmd)
	if strings.HasPrefix(cmd, `"`) {
		var b strings.Builder
		for i := 1; i < len(cmd); i++ {
			switch c := cmd[i]; {
			case c == '\\' && i+1 < len(cmd):
				i++
				b.WriteByte(cmd[i])
			case c == '"':
				return b.String()
			default:
				b.WriteByte(c)
			}
		}
		return b.String()
	}
	bin, _, _ := strings.Cut(cmd, " ")
	return bin
}
