package cli

import (
	"strings"
	"testing"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/hookwire"
)

// A ledger that refuses writes reaches the user as its own exit code, not
// as "no leader" (which shares ResourceExhausted) or "no node".
func TestRefusedWriteIsDiskFullNotNoLeader(t *testing.T) {
	for _, c := range []hookwire.Code{hookwire.ResourceExhausted, hookwire.Unavailable} {
		got := rpcErr(api.NewStatusError(c, "ledger: disk full since 10:02:03", api.ReasonLedgerUnwritable, nil), place{Socket: "/nonexistent"})
		if code := ExitCode(got); code != ExitDiskFull {
			t.Fatalf("%v: exit %d, want %d (%v)", c, code, ExitDiskFull, got)
		}
		if !strings.Contains(got.Error(), "free space") {
			t.Fatalf("message names no fix: %v", got)
		}
	}
	plain := rpcErr(api.NewStatusError(hookwire.ResourceExhausted, "no leader", "", nil), place{})
	if code := ExitCode(plain); code != ExitNoLeader {
		t.Fatalf("no-leader: exit %d, want %d", code, ExitNoLeader)
	}
}
