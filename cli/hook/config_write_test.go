package hook

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRecordConfigKeepsTheRest: mesh init's name and role go into the
// config file, in either format, and what else the file holds stays:
// other keys, comments, the [launchers] section, the file's mode.
func TestRecordConfigKeepsTheRest(t *testing.T) {
	set := map[string]any{"name": "nodeA", "server": true}
	keys := []string{"name", "server"}
	dir := t.TempDir()

	lines := filepath.Join(dir, "harn.conf")
	in := "# my settings\nname = old\ngossip-port = 7810\n\n[launchers]\nrun = [\"make\", \"test\"]\n"
	if err := os.WriteFile(lines, []byte(in), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := RecordConfig(lines, keys, set); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(lines)
	got, err := ParseConfigFile(b)
	if err != nil {
		t.Fatalf("%v:\n%s", err, b)
	}
	if got.vals["name"] != "nodeA" || got.vals["server"] != "true" || got.vals["gossip-port"] != "7810" || len(got.launchers["run"]) != 2 {
		t.Errorf("lines after record: %+v\n%s", got, b)
	}
	if !strings.HasPrefix(string(b), "# my settings\nname = nodeA\n") || strings.Count(string(b), "name =") != 1 {
		t.Errorf("the comment or the key's place was lost:\n%s", b)
	}
	if fi, _ := os.Stat(lines); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want the file's own 0640", fi.Mode().Perm())
	}

	js := filepath.Join(dir, "config.json")
	if err := os.WriteFile(js, []byte(`{"http_port": "0", "name": "x", "join": ["a:1", "b:2"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := RecordConfig(js, keys, set); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(js)
	got, err = ParseConfigFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.vals["name"] != "nodeA" || got.vals["server"] != "true" || got.vals["http_port"] != "0" || got.vals["join"] != "a:1,b:2" {
		t.Errorf("JSON after record: %+v\n%s", got.vals, b)
	}

	fresh := filepath.Join(dir, "new", "harn", "config.json")
	if err := RecordConfig(fresh, keys, set); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(fresh)
	if got, err := ParseConfig(b); err != nil || got["name"] != "nodeA" || got["server"] != "true" {
		t.Errorf("a new file: %v %v\n%s", got, err, b)
	}
	if fi, _ := os.Stat(fresh); fi.Mode().Perm() != 0o600 {
		t.Errorf("a new config file has mode %v, want 0600", fi.Mode().Perm())
	}

	// A new lines file (HARN_CONFIG=/etc/harn/harn.conf, say) is made too.
	freshLines := filepath.Join(dir, "etc", "harn", "harn.conf")
	if err := RecordConfig(freshLines, keys, set); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(freshLines)
	if string(b) != "name = nodeA\nserver = true\n" {
		t.Errorf("a new lines file:\n%s", b)
	}
	if fi, _ := os.Stat(filepath.Dir(freshLines)); fi.Mode().Perm() != 0o700 {
		t.Errorf("a new config folder has mode %v, want 0700", fi.Mode().Perm())
	}

	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"name": `), 0o600)
	if err := RecordConfig(bad, keys, set); err == nil {
		t.Error("a broken JSON file was overwritten")
	}
}
