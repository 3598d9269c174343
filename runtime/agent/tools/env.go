package tools

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/harn-dev/harn/util/secretenv"
)

// The environment of the processes the tool box starts for a model: the
// node's own, without its secrets. The provider key stays with the
// provider call: no tool (the shell tool, a stdio MCP server) gets
// HARN_PROVIDER_KEY, HARN_PROVIDER_KEY_FILE, the node's tokens, nor any
// *_API_KEY, *_TOKEN, *SECRET* … of the node's environment
// (secretenv.Scrub, a denylist of secret-looking names). An MCP server
// gets a secret only when its config names it in its env.

// toolEnv is the shell tool's environment.
func toolEnv() []string { return secretenv.Scrub(os.Environ()) }

// mcpEnv is a stdio MCP server's environment: toolEnv, then its config's
// env, in name order. A value of exactly ${NAME} passes NAME on from the
// node's environment (how a config names a secret the server needs);
// harn's own secrets are never passed on.
func mcpEnv(server string, env map[string]string) ([]string, error) {
	out := toolEnv()
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v := env[k]
		if ref, ok := envRef(v); ok {
			if secretenv.IsHarnSecret(ref) {
				return nil, fmt.Errorf("%w: MCP server %s: env %s names %s, harn's own secret, which no tool gets", ErrConfig, server, k, ref)
			}
			v = os.Getenv(ref)
		}
		out = append(out, k+"="+v)
	}
	return out, nil
}

// envRef reads a value of the form ${NAME}.
func envRef(v string) (string, bool) {
	name, ok := strings.CutPrefix(v, "${")
	if !ok {
		return "", false
	}
	name, ok = strings.CutSuffix(name, "}")
	if !ok || name == "" || strings.ContainsAny(name, "${} =") {
		return "", false
	}
	return name, true
}

// checkBearerEnv refuses an HTTP server's bearer_token_env that names
// harn's own secret: the provider key would go to the server's URL.
func checkBearerEnv(s MCPServer) error {
	if s.BearerTokenEnv != "" && secretenv.IsHarnSecret(s.BearerTokenEnv) {
		return fmt.Errorf("%w: MCP server %s: bearer_token_env %s is harn's own secret, which goes to the model provider only; name the server's own token",
			ErrConfig, s.Name, s.BearerTokenEnv)
	}
	return nil
}
