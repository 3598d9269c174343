package secretenv

import (
	"slices"
	"testing"
)

// TestScrubDropsEverySecretLookingName: the denylist over the parent's
// environment. Every name below that holds a credential is dropped; the
// names a tool needs to work stay.
func TestScrubDropsEverySecretLookingName(t *testing.T) {
	secret := []string{
		"HARN_PROVIDER_KEY", "HARN_PROVIDER_KEY_FILE", "HARN_HTTP_TOKEN", "HARN_HTTP_TOKEN_FILE",
		"HARN_GOSSIP_KEY", "HARN_JOIN_TOKEN", "HARN_METRICS_TOKEN_FILE",
		"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "openai_api_key", "GITHUB_TOKEN", "GH_TOKEN", "NPM_TOKEN",
		"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "CLIENT_SECRET", "DB_PASSWORD", "STRIPE_KEY",
		"GOOGLE_APPLICATION_CREDENTIALS", "API_KEY", "TOKEN", "GITLAB_PAT",
	}
	keep := []string{"PATH", "HOME", "LANG", "TERM", "GOPATH", "HTTPS_PROXY", "SSH_AUTH_SOCK", "HARN_SOCKET",
		"HARN_DATA_DIR", "HARN_TASK", "HARN_SESSION", "KEYBOARD", "TOKENIZERS_PARALLELISM"}
	var env []string
	for _, n := range append(slices.Clone(secret), keep...) {
		env = append(env, n+"=v")
	}
	env = append(env, "NOEQUALS")
	got := Scrub(env)
	var want []string
	for _, n := range keep {
		want = append(want, n+"=v")
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Scrub kept %q, want %q", got, want)
	}
}

// TestScrubHarnKeepsAnAgentsOwnKeys: what a launcher's agent gets loses
// harn's secrets only.
func TestScrubHarnKeepsAnAgentsOwnKeys(t *testing.T) {
	got := ScrubHarn([]string{"HARN_PROVIDER_KEY=k", "HARN_PROVIDER_KEY_FILE=/k", "HARN_HTTP_TOKEN=t",
		"ANTHROPIC_API_KEY=a", "HARN_SOCKET=/s", "PATH=/bin"})
	if want := []string{"ANTHROPIC_API_KEY=a", "HARN_SOCKET=/s", "PATH=/bin"}; !slices.Equal(got, want) {
		t.Fatalf("ScrubHarn kept %q, want %q", got, want)
	}
}

func TestWithoutDropsTheNamedEntries(t *testing.T) {
	got := Without([]string{ProviderKey + "=k", ProviderKeyFile + "=/f", "HARN_PROVIDER_KEYS=x", "PATH=/bin"}, ProviderKey, ProviderKeyFile)
	if want := []string{"HARN_PROVIDER_KEYS=x", "PATH=/bin"}; !slices.Equal(got, want) {
		t.Fatalf("Without kept %q, want %q", got, want)
	}
}
