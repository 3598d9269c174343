package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// configPath is the config file the commands read: --config, else
// HARN_CONFIG, else $XDG_CONFIG_HOME/harn/config.json. fromFlag says it
// came from --config (a printed command must then repeat it).
func ConfigPath(c *cobra.Command) (path string, explicit, fromFlag bool) {
	if f := c.Flags().Lookup("config"); f != nil && f.Value.String() != "" {
		return f.Value.String(), true, true
	}
	if v := os.Getenv("HARN_CONFIG"); v != "" {
		return v, true, false
	}
	if d, err := os.UserConfigDir(); err == nil {
		return filepath.Join(d, "harn", "config.json"), false, false
	}
	return "", false, false
}

// setting is a flag's value for a command that does not have the flag:
// its environment variable, else the config file, else def.
func Setting(c *cobra.Command, name, def string) string {
	if v, ok := os.LookupEnv(EnvName(name)); ok {
		return v
	}
	if file, err := LoadConfigFile(c); err == nil {
		if v, ok := file.Lookup(name); ok {
			return v
		}
	}
	return def
}

// ErrConfigWrite wraps a config file that could not be updated.
var ErrConfigWrite = errors.New("cannot update the config file")

// recordConfig sets keys (in order) in the config file at path and keeps
// everything else in it. A JSON object gets the keys set (other keys
// kept); `key = value` lines get each key's line replaced in place, or a
// line added before the [launchers] section (which runs to the end), and
// comments stay. A missing file is made: JSON when its name ends in
// .json, else lines; mode 0600 in a 0700 folder. The file is replaced
// whole (a temporary file renamed), keeping its mode.
func RecordConfig(path string, keys []string, vals map[string]any) error {
	b, err := os.ReadFile(path)
	mode := fs.FileMode(0o600)
	switch {
	case err == nil:
		if fi, err := os.Stat(path); err == nil {
			mode = fi.Mode().Perm()
		}
	case errors.Is(err, fs.ErrNotExist):
		if strings.HasSuffix(path, ".json") {
			b = []byte("{}")
		}
	default:
		return fmt.Errorf("%w %s: %w", ErrConfigWrite, path, err)
	}
	// err is the read's (nil, or no file yet); only the edit's counts here.
	var out []byte
	var eerr error
	if s := bytes.TrimSpace(b); bytes.HasPrefix(s, []byte("{")) {
		out, eerr = setJSONKeys(s, keys, vals)
	} else {
		out = setLineKeys(b, keys, vals)
	}
	if err := eerr; err != nil {
		return fmt.Errorf("%w %s: %w", ErrConfigWrite, path, err)
	}
	if _, err := ParseConfigFile(out); err != nil {
		return fmt.Errorf("%w %s: the result would not parse: %w", ErrConfigWrite, path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("%w %s: %w", ErrConfigWrite, path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".config-*")
	if err != nil {
		return fmt.Errorf("%w %s: %w", ErrConfigWrite, path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(out); err == nil {
		err = tmp.Chmod(mode)
	}
	if err := errors.Join(err, tmp.Sync(), tmp.Close()); err != nil {
		return fmt.Errorf("%w %s: %w", ErrConfigWrite, path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("%w %s: %w", ErrConfigWrite, path, err)
	}
	return nil
}

func setJSONKeys(b []byte, keys []string, vals map[string]any) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	for _, k := range keys {
		delete(m, strings.ReplaceAll(k, "-", "_"))
		v, err := json.Marshal(vals[k])
		if err != nil {
			return nil, err
		}
		m[k] = v
	}
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

func setLineKeys(b []byte, keys []string, vals map[string]any) []byte {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		lines = nil
	}
	end := len(lines) // where the [launchers] section starts
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "[") {
			end = i
			break
		}
	}
	for _, k := range keys {
		line := fmt.Sprintf("%s = %v", k, vals[k])
		found := false
		for i := 0; i < end; i++ {
			if lineKey(lines[i]) == k || lineKey(lines[i]) == strings.ReplaceAll(k, "-", "_") {
				lines[i], found = line, true
			}
		}
		if !found {
			lines = append(lines[:end], append([]string{line}, lines[end:]...)...)
			end++
		}
	}
	return []byte(strings.Join(lines, "\n") + "\n")
}

// lineKey is the key of a `key = value` (or `key: value`) line, "" for a
// comment or a blank line.
func lineKey(l string) string {
	l = strings.TrimSpace(l)
	if l == "" || strings.HasPrefix(l, "#") {
		return ""
	}
	i := strings.IndexAny(l, "=:")
	if i < 0 {
		return ""
	}
	return strings.TrimSpace(l[:i])
}
