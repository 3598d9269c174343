package cli

import (
	"slices"
	"testing"

	"github.com/harn-dev/harn/cli/hook"
)

// TestAStartedNodeGetsNoProviderKey: the node a client starts (the TUI, a
// hook) gets the caller's environment without its provider key and the
// key file's path.
func TestAStartedNodeGetsNoProviderKey(t *testing.T) {
	got := hook.StartedNodeEnv([]string{"HARN_PROVIDER_KEY=sk-user", "HARN_PROVIDER_KEY_FILE=/home/u/.key", "HARN_DATA_DIR=/d", "PATH=/bin"})
	if want := []string{"HARN_DATA_DIR=/d", "PATH=/bin"}; !slices.Equal(got, want) {
		t.Fatalf("a started node's environment: %q, want %q", got, want)
	}
}
