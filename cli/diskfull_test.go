package cli

import (
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/node/api"
)

// A ledger that refuses writes reaches the user as its own exit code, not
// as "no leader" (which shares ResourceExhausted) or "no node".
func TestRefusedWriteIsDiskFullNotNoLeader(t *testing.T) {
	for _, c := range []codes.Code{codes.ResourceExhausted, codes.Unavailable} {
		st, err := status.New(c, "ledger: disk full since 10:02:03").
			WithDetails(&errdetails.ErrorInfo{Reason: api.ReasonLedgerUnwritable, Domain: api.ErrorDomain})
		if err != nil {
			t.Fatal(err)
		}
		got := rpcErr(st.Err(), place{Socket: "/nonexistent"})
		if code := ExitCode(got); code != ExitDiskFull {
			t.Fatalf("%v: exit %d, want %d (%v)", c, code, ExitDiskFull, got)
		}
		if !strings.Contains(got.Error(), "free space") {
			t.Fatalf("message names no fix: %v", got)
		}
	}
	plain := rpcErr(status.Error(codes.ResourceExhausted, "no leader"), place{})
	if code := ExitCode(plain); code != ExitNoLeader {
		t.Fatalf("no-leader: exit %d, want %d", code, ExitNoLeader)
	}
}
