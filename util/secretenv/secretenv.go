// Package secretenv is the room of a child process's environment: it
// drops the variables that hold secrets before a process the node starts
// for a model (a shell tool, an MCP server) or for an agent inherits them.
// It is a denylist of secret-looking names over the parent's environment,
// not an allowlist: tools keep PATH, HOME, the locale, proxies and build
// settings, and lose every name IsSecret matches. It imports the standard
// library only.
package secretenv

import "strings"

// Provider key variables: the model provider's key, and the file holding
// it. A node started for a client (the TUI, a hook) never inherits them.
const (
	ProviderKey     = "HARN_PROVIDER_KEY"
	ProviderKeyFile = "HARN_PROVIDER_KEY_FILE"
)

// secretWords are the words that make a name secret anywhere in it.
var secretWords = []string{"SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"}

// secretSuffixes make a name secret at its end: OPENAI_API_KEY,
// GITHUB_TOKEN, AWS_SESSION_TOKEN, STRIPE_KEY, NPM_AUTH.
var secretSuffixes = []string{"_KEY", "_APIKEY", "_TOKEN", "_AUTH", "_PAT"}

// secretNames are whole names that are secrets.
var secretNames = []string{"KEY", "TOKEN", "APIKEY", "API_KEY", "AUTH_TOKEN"}

// IsHarnSecret reports harn's own secrets: a HARN_ name holding KEY,
// TOKEN, SECRET or PASSWORD (HARN_PROVIDER_KEY, HARN_PROVIDER_KEY_FILE,
// HARN_HTTP_TOKEN, HARN_GOSSIP_KEY_FILE, HARN_JOIN_TOKEN, …): the key
// itself, or the path of the file that holds it.
func IsHarnSecret(name string) bool {
	n := strings.ToUpper(name)
	if !strings.HasPrefix(n, "HARN_") {
		return false
	}
	for _, w := range []string{"KEY", "TOKEN", "SECRET", "PASSWORD"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// IsSecret reports a variable a tool must not see: harn's own secrets,
// and any name that looks like a credential (*_API_KEY, *_KEY, *_TOKEN,
// *SECRET*, *PASSWORD*, …), in any case.
func IsSecret(name string) bool {
	if IsHarnSecret(name) {
		return true
	}
	n := strings.ToUpper(name)
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	for _, s := range secretSuffixes {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	for _, s := range secretNames {
		if n == s {
			return true
		}
	}
	return false
}

// Scrub returns env (KEY=VALUE entries) without the secret ones
// (IsSecret). Entries without '=' are dropped too.
func Scrub(env []string) []string {
	return filter(env, func(k string) bool { return !IsSecret(k) })
}

// ScrubHarn returns env without harn's own secrets (IsHarnSecret): what an
// external agent a launcher starts gets, which keeps its own keys
// (ANTHROPIC_API_KEY for claude, say).
func ScrubHarn(env []string) []string {
	return filter(env, func(k string) bool { return !IsHarnSecret(k) })
}

// Without returns env without the entries named.
func Without(env []string, names ...string) []string {
	return filter(env, func(k string) bool {
		for _, n := range names {
			if k == n {
				return false
			}
		}
		return true
	})
}

func filter(env []string, keep func(string) bool) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, ok := strings.Cut(kv, "=")
		if ok && keep(k) {
			out = append(out, kv)
		}
	}
	return out
}
