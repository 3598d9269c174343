package node

import (
	"context"
	"fmt"
	"os/user"
	"testing"
	"time"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/tasks"
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
