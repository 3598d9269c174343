package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/daemon"
	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node"
)

// runMain runs harnd in-process with a clean environment and returns its
// exit code and stderr.
func runMain(t *testing.T, args ...string) (int, string) {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("HARN_CONFIG", "")
	var out, errb bytes.Buffer
	code := daemon.Main(args, strings.NewReader(""), &out, &errb, work())
	return code, errb.String()
}

func writeMode(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// and --gossip-key together are a usage error.
func TestGossipKeyFileReadsKey(t *testing.T) {
	dir := t.TempDir()
	key, _ := node.GenerateGossipKey()
	want, _ := node.DecodeGossipKey(key)
	kf := filepath.Join(dir, "gossip.key")
	writeMode(t, kf, key+"\n", 0o600)
	c := &cobra.Command{Use: "node"}
	c.Flags().String("gossip-key", "", "")
	c.Flags().String("gossip-key-file", "", "")
	c.Flags().Set("gossip-key-file", kf)
	var cc node.ClusterConfig
	if err := gossipKeyFromFile(c, &cc); err != nil || !bytes.Equal(cc.GossipKey, want) {
		t.Fatalf("key from file: %x, %v", cc.GossipKey, err)
	}
	c.Flags().Set("gossip-key", key)
	if err := gossipKeyFromFile(c, &cc); hook.ExitCode(err) != hook.ExitUsage {
		t.Fatalf("both flags: %v; want a usage error", err)
	}

	os.Chmod(kf, 0o644)
	data := filepath.Join(dir, "data")
	code, stderr := runMain(t, "node", "--no-mesh", "--data-dir", data, "--socket", filepath.Join(dir, "s"), "--gossip-key-file", kf)
	if code != hook.ExitPermission || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "chmod 600") {
		t.Fatalf("open key file: exit %d, stderr %q; want exit %d and one line", code, stderr, hook.ExitPermission)
	}
	if _, err := os.Stat(filepath.Join(data, "ledger")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the node opened its ledger with a refused key file")
	}
}
