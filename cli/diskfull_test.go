package cli

import (
	"strings"
	"testing"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/hookwire"
)

// A ledger that refuses writes reaches the user as its own exit code, not
// as "no leader" (which shares ResourceExhausted) or "no node".
func TestRefusedWriteIsDiskFullNotNoLeader(t *testing.T) {
	for _, c := range []hookwire.Code{hookwire.ResourceExhausted, hookwire.Unavailable} {
		got := hook.RpcErr(api.NewStatusError(c, "ledger: disk full since 10:02:03", api.ReasonLedgerUnwritable, nil), hook.Place{Socket: "/nonexistent"})
		if code := hook.ExitCode(got); code != hook.ExitDiskFull {
			t.Fatalf("%v: exit %d, want %d (%v)", c, code, hook.ExitDiskFull, got)
		}
		if !strings.Contains(got.Error(), "free space") {
			t.Fatalf("message names no fix: %v", got)
		}
	}
	plain := hook.RpcErr(api.NewStatusError(hookwire.ResourceExhausted, "no leader", "", nil), hook.Place{})
	if code := hook.ExitCode(plain); code != hook.ExitNoLeader {
		t.Fatalf("no-leader: exit %d, want %d", code, hook.ExitNoLeader)
	}
}
