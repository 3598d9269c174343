package node

import (
	"context"
	"fmt"
	"os/user"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/node/trust"
)

// TestOperatorIdentityIsTheSocketPeersUser: an answer given on the local
// socket is recorded as the calling process's user and uid at this node,
// whatever name the client puts in the request.
func TestOperatorIdentityIsTheSocketPeersUser(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	n := openNode(t, cfg)
	cl := localClient(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	got := make(chan tasks.Answer, 1)
	go func() {
		_, ans, _, _ := n.Tasks().Approvals().Await(ctx, tasks.Request{Session: "s1", Agent: "claude-code", Tool: "Bash"}, 5*time.Second)
		got <- ans
	}()
	var id string
	for i := 0; i < 500 && id == ""; i++ {
		if l := n.Tasks().Approvals().List(); len(l) == 1 {
			id = l[0].ID
		} else {
			time.Sleep(5 * time.Millisecond)
		}
	}
	if id == "" {
		t.Fatal("the request never opened")
	}
	res, err := cl.Answer(ctx, &api.AnswerRequest{Request: id, Allow: true, By: "mallory (uid 0)@elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	r := tasks.RequestFromAPI(res.Request)
	u, _ := user.Current()
	want := fmt.Sprintf("%s (uid %s)@testnode", u.Username, u.Uid)
	if r.Answer == nil || r.Answer.By != want {
		t.Fatalf("the answer is recorded by %+v, want %q", r.Answer, want)
	}
	if a := <-got; a.By != want {
		t.Fatalf("the hook got an answer by %q, want %q", a.By, want)
	}
}

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
		if got := remoteBy(tc.sent, caller); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.sent, got, tc.want)
		}
	}
	long := remoteBy(strings.Repeat("x", 10000), caller)
	if op, node := splitBy(long); len([]rune(op)) > maxOperatorLen || node != "laptop" {
		t.Fatalf("a long operator part is not cut: %d runes, node %q", len([]rune(op)), node)
	}
	if got := operatorPart("alice (uid 1000)@n1"); got != "alice (uid 1000)" {
		t.Fatalf("operatorPart %q", got)
	}
}

// TestOperatorIdentityOfAnInProcessCallerKeepsItsName: the board, which
// calls the local service in the process, keeps its own name.
func TestOperatorIdentityOfAnInProcessCallerKeepsItsName(t *testing.T) {
	n := &Node{cfg: Config{Name: "n1"}}
	if got := n.operatorBy(context.Background(), "board@n1"); got != "board@n1" {
		t.Fatalf("got %q", got)
	}
	if got := n.operatorBy(context.Background(), ""); got != "operator@n1" {
		t.Fatalf("got %q", got)
	}
}
