package main

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/daemon"
	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node"
	"github.com/harn-dev/harn/node/remotepolicy"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/util/secretenv"
	"github.com/harn-dev/harn/util/secretfile"
	"github.com/harn-dev/harn/util/text"
)

// Bounds of the provider's settings.
const (
	maxProviderURL = 2048
	maxModels      = 64
	maxModelName   = 256
	maxKeyFile     = 4096
)

// agentConfig reads what harn's own agent runs with on this node (its
// provider: --provider, --provider-url, the key from HARN_PROVIDER_KEY or
// --provider-key-file, --provider-models) and what a caller on another
// node may choose (--workspace and [workspaces], --remote-profiles) into
// cfg. The key is taken out of the process's environment: no process the
// node starts inherits it.
func agentConfig(c *cobra.Command, cfg *node.Config) error {
	f := c.Flags()
	p := tasks.Provider{}
	p.Kind, _ = f.GetString("provider")
	if p.Kind != "openai" && p.Kind != "anthropic" {
		return hook.UsageErr(fmt.Errorf("--provider %q: use openai or anthropic", text.Clip(p.Kind, 64)))
	}
	p.URL, _ = f.GetString("provider-url")
	if p.URL != "" {
		u, err := url.Parse(p.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(p.URL) > maxProviderURL {
			return hook.UsageErr(fmt.Errorf("--provider-url %q: give an http:// or https:// base URL, e.g. http://127.0.0.1:8080/v1", text.Clip(p.URL, 200)))
		}
	}
	p.Models, _ = f.GetStringSlice("provider-models")
	p.Models = slices.DeleteFunc(p.Models, func(m string) bool { return m == "" })
	if len(p.Models) > maxModels || slices.ContainsFunc(p.Models, func(m string) bool { return len(m) > maxModelName }) {
		return hook.UsageErr(fmt.Errorf("--provider-models: at most %d names of at most %d bytes", maxModels, maxModelName))
	}
	key := os.Getenv(secretenv.ProviderKey)
	_ = os.Unsetenv(secretenv.ProviderKey)
	if file, _ := f.GetString("provider-key-file"); file != "" {
		if key != "" {
			return hook.UsageErr(errors.New("HARN_PROVIDER_KEY and --provider-key-file are both set; keep the file (the environment is inherited)"))
		}
		k, err := secretfile.Read(file, maxKeyFile)
		if err != nil {
			var ie *secretfile.InsecureFileError
			if errors.As(err, &ie) {
				return hook.WithCode(hook.ExitPermission, fmt.Errorf("--provider-key-file: %s", strings.TrimPrefix(ie.Error(), "trust: ")))
			}
			return hook.UsageErr(fmt.Errorf("--provider-key-file: %s", strings.TrimPrefix(err.Error(), "trust: ")))
		}
		if k == "" {
			return hook.UsageErr(fmt.Errorf("--provider-key-file %s is empty; write the key into it", text.Clip(text.OneLine(file), 200)))
		}
		key = k
		cfg.SecretFiles = append(cfg.SecretFiles, file)
	}
	p.Key = key
	cfg.Provider = p
	for _, name := range []string{"http-token-file", "metrics-token-file", "gossip-key-file", "join-token-file"} {
		if v, err := f.GetString(name); err == nil && v != "" {
			cfg.SecretFiles = append(cfg.SecretFiles, v)
		}
	}
	if p := daemon.ConfigPath(c); p != "" {
		cfg.SecretFiles = append(cfg.SecretFiles, p)
	}

	r := remotepolicy.DefaultConfig()
	rp, _ := f.GetString("remote-profiles")
	profiles, err := remotepolicy.ParseProfiles(rp)
	if err != nil {
		return hook.UsageErr(err)
	}
	r.Profiles = profiles
	ws, _ := f.GetStringArray("workspace")
	if !f.Changed("workspace") {
		if _, env := os.LookupEnv(hook.EnvName("workspace")); !env {
			fromFile, err := daemon.ConfigWorkspaces(c)
			if err != nil {
				return hook.UsageErr(err) // applySettings reported it first
			}
			ws = append(ws, fromFile...)
		}
	}
	if r.Workspaces, err = remotepolicy.ResolveWorkspaces(ws); err != nil {
		return hook.UsageErr(err)
	}
	cfg.Remote = r
	return nil
}
