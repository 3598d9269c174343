package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/node/trust"
)

func writeMode(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// runMain runs the CLI in-process with a clean environment and returns its
// exit code and stderr.
func runMain(t *testing.T, args ...string) (int, string) {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("HARN_CONFIG", "")
	var out, errb bytes.Buffer
	code := Main(args, strings.NewReader(""), &out, &errb)
	return code, errb.String()
}

// TestConfigWithSecretReadableByOthersRefused: a config file that holds a
// secret (a gossip key) and that group or others may read is refused with
// one line naming the fix, exit 13, as ssh refuses a private key; a private
// one, or one with no secret in it, is read.
func TestConfigWithSecretReadableByOthersRefused(t *testing.T) {
	dir := t.TempDir()
	key, _ := layout.GenerateGossipKey()
	for _, tc := range []struct {
		name    string
		content string
		mode    os.FileMode
		refused bool
	}{
		{"secret, 0644", "gossip-key = " + key + "\n", 0o644, true},
		{"secret, 0640", `{"gossip_key": "` + key + `"}`, 0o640, true},
		{"secret, 0604", "gossip-key = " + key + "\n", 0o604, true},
		{"secret, 0600", "gossip-key = " + key + "\n", 0o600, false},
		{"no secret, 0644", "reap-interval = 2s\n", 0o644, false},
		{"key file path, 0644", "gossip-key-file = /etc/harn/key\n", 0o644, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.NewReplacer(" ", "", ",", "").Replace(tc.name))
			writeMode(t, p, tc.content, tc.mode)
			c := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
			c.Flags().String("config", p, "")
			c.Flags().String("gossip-key", "", "")
			c.Flags().String("gossip-key-file", "", "")
			c.Flags().String("reap-interval", "", "")
			err := hook.ApplySettings(c)
			if !tc.refused {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ie *trust.InsecureFileError
			if !errors.As(err, &ie) || hook.ExitCode(err) != hook.ExitPermission {
				t.Fatalf("applySettings: %v (exit %d); want an insecure-file error, exit %d", err, hook.ExitCode(err), hook.ExitPermission)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") || !strings.Contains(msg, "gossip") || !strings.Contains(msg, "chmod 600 "+p) {
				t.Fatalf("message %q; want one line naming the secret and `chmod 600 %s`", msg, p)
			}
			if v, _ := c.Flags().GetString("gossip-key"); v != "" {
				t.Fatal("a secret from a refused config file was applied")
			}
		})
	}
}

// TestReadSecretFileRefusesOpenModes: readSecretFile reads a private file
// (trimmed), and refuses one that group or others may read, a missing one
// and an empty one, each with exit 13 and one line.
func TestReadSecretFileRefusesOpenModes(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	writeMode(t, good, "  s3cret\n", 0o600)
	if s, err := hook.ReadSecretFile(good); err != nil || s != "s3cret" {
		t.Fatalf("private file: %q, %v", s, err)
	}
	open := filepath.Join(dir, "open")
	writeMode(t, open, "s3cret", 0o644)
	group := filepath.Join(dir, "group")
	writeMode(t, group, "s3cret", 0o640)
	empty := filepath.Join(dir, "empty")
	writeMode(t, empty, "\n", 0o600)
	for _, tc := range []struct{ path, want string }{
		{open, "chmod 600"},
		{group, "readable by its group"},
		{filepath.Join(dir, "missing"), "no such file"},
		{empty, "empty"},
	} {
		_, err := hook.ReadSecretFile(tc.path)
		if hook.ExitCode(err) != hook.ExitPermission || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v (exit %d); want exit %d, one line with %q", tc.path, err, hook.ExitCode(err), hook.ExitPermission, tc.want)
		}
	}
}

// TestGossipKeyFileReadsKey: --gossip-key-file reads the key from a
// private file; an open file exits 13 before any node starts; the flag
