package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/daemon"
	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node"
)

// agentConfigOf runs `harn node ARGS` through the command line with a
// RunNode that only reads agentConfig.
func agentConfigOf(t *testing.T, args ...string) (node.Config, int, string) {
	t.Helper()
	var cfg node.Config
	d := &daemon.Daemon{RunNode: func(c *cobra.Command) error { return agentConfig(c, &cfg) }}
	var out, errb bytes.Buffer
	dir := t.TempDir()
	code := daemon.Main(append([]string{"node", "--data-dir", dir + "/data", "--socket", dir + "/s", "--no-mesh"}, args...),
		strings.NewReader(""), &out, &errb, d)
	return cfg, code, errb.String()
}

// TestTheNodeTakesItsProviderKeyOutOfItsEnvironment: the key is the
// node's, in memory; no process the node starts later inherits it.
func TestTheNodeTakesItsProviderKeyOutOfItsEnvironment(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("HARN_PROVIDER_KEY", "sk-env")
	cfg, code, stderr := agentConfigOf(t, "--provider-url", "http://127.0.0.1:8080/v1", "--provider-models", "small,large")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if cfg.Provider.Key != "sk-env" || cfg.Provider.URL != "http://127.0.0.1:8080/v1" || !slices.Equal(cfg.Provider.Models, []string{"small", "large"}) {
		t.Fatalf("provider %+v", cfg.Provider)
	}
	if v, ok := os.LookupEnv("HARN_PROVIDER_KEY"); ok {
		t.Fatalf("HARN_PROVIDER_KEY=%q stays in the node's environment", v)
	}
}

// TestWorkspacesTakeTheFlagThenTheEnvironmentThenTheConfigFile: the
// project's precedence, the config's key and [workspaces] together.
func TestWorkspacesTakeTheFlagThenTheEnvironmentThenTheConfigFile(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	base, _ := filepath.EvalSymlinks(t.TempDir())
	dirs := map[string]string{}
	for _, n := range []string{"flag", "env", "key", "section"} {
		dirs[n] = filepath.Join(base, n)
		if err := os.Mkdir(dirs[n], 0o700); err != nil {
			t.Fatal(err)
		}
	}
	conf := filepath.Join(base, "harn.conf")
	if err := os.WriteFile(conf, []byte("workspace = "+dirs["key"]+"\n[workspaces]\n"+dirs["section"]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HARN_CONFIG", conf)
	check := func(want []string, args ...string) {
		t.Helper()
		cfg, code, stderr := agentConfigOf(t, args...)
		if code != 0 || !slices.Equal(cfg.Remote.Workspaces, want) {
			t.Fatalf("%v: exit %d %s, workspaces %v, want %v", args, code, stderr, cfg.Remote.Workspaces, want)
		}
		if !slices.Contains(cfg.SecretFiles, conf) {
			t.Fatalf("the config file is not among the secret files: %v", cfg.SecretFiles)
		}
	}
	check([]string{dirs["key"], dirs["section"]})
	t.Setenv("HARN_WORKSPACE", dirs["env"])
	check([]string{dirs["env"]})
	check([]string{dirs["flag"]}, "--workspace", dirs["flag"])
}

// TestBadProviderAndRemoteFlagsRefuseTheStart: exit 2 with one line
// naming the flag; an insecure key file is exit 13.
func TestBadProviderAndRemoteFlagsRefuseTheStart(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--provider", "gemini"}, hook.ExitUsage, "--provider"},
		{[]string{"--provider-url", "ftp://x/"}, hook.ExitUsage, "--provider-url"},
		{[]string{"--remote-profiles", "root"}, hook.ExitUsage, "--remote-profiles"},
		{[]string{"--workspace", filepath.Join(dir, "missing")}, hook.ExitUsage, "--workspace"},
		{[]string{"--provider-key-file", filepath.Join(dir, "open.key")}, hook.ExitPermission, "chmod 600"},
	} {
		writeMode(t, filepath.Join(dir, "open.key"), "sk-1", 0o644)
		_, code, stderr := agentConfigOf(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want exit %d, one line naming %s", c.args, code, stderr, c.code, c.want)
		}
	}
	t.Setenv("HARN_PROVIDER_KEY", "sk-env")
	writeMode(t, filepath.Join(dir, "ok.key"), "sk-1", 0o600)
	if _, code, stderr := agentConfigOf(t, "--provider-key-file", filepath.Join(dir, "ok.key")); code != hook.ExitUsage || !strings.Contains(stderr, "keep the file") {
		t.Errorf("the key twice: exit %d, %q", code, stderr)
	}
}
