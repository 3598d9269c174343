package operator

import (
	"context"
	"strings"
	"testing"

	"github.com/harn-dev/harn/node/trust"
)

// TestOperatorIdentityFromAnotherNodeIsSanitizedAndBound: the operator
// part a caller sends loses its control characters and '@' and is cut;
// the node part is always the caller's certificate name.
func TestOperatorIdentityFromAnotherNodeIsSanitizedAndBound(t *testing.T) {
	caller := trust.Identity{Name: "laptop", Role: trust.RoleNode, Serial: "1"}
	for _, tc := range []struct{ sent, want string }{
		{"alice (uid 1000)", "alice (uid 1000)@laptop"},
		{"root (uid 0)@server", "root (uid 0)_server@laptop"},
		{"eve\x1b[2J\r\nbob", "eve[2J bob@laptop"},
		{"", "operator@laptop"},
		{"\x00\x07", "operator@laptop"},
	} {
		if got := Remote(tc.sent, caller); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.sent, got, tc.want)
		}
	}
	long := Remote(strings.Repeat("x", 10000), caller)
	if op, node := Split(long); len([]rune(op)) > MaxLen || node != "laptop" {
		t.Fatalf("a long operator part is not cut: %d runes, node %q", len([]rune(op)), node)
	}
	if got := Part("alice (uid 1000)@n1"); got != "alice (uid 1000)" {
		t.Fatalf("operatorPart %q", got)
	}
}

// TestOperatorIdentityOfAnInProcessCallerKeepsItsName: the board, which
// calls the local service in the process, keeps its own name.
func TestOperatorIdentityOfAnInProcessCallerKeepsItsName(t *testing.T) {
	if got := By(context.Background(), "n1", "board@n1"); got != "board@n1" {
		t.Fatalf("got %q", got)
	}
	if got := By(context.Background(), "n1", ""); got != "operator@n1" {
		t.Fatalf("got %q", got)
	}
}
