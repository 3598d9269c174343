package node

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/node/tasks/taskwire"
	"github.com/harn-dev/harn/node/trust"
)

// TestHistoryOfAnotherNodesSessionIsRefusedWithoutRemoteControl drives the
// read ops of the task RPC (history, what `harn attach` streams; show,
// the ledger steps of `harn task show`; events; grants; digest; usage)
// from a real member's node-role certificate against a node whose
// --remote-control policy is the default off: each is PermissionDenied
// naming the policy, and no answer carries the session's text. Naming the
// caller in the policy lets the same calls through.
func TestHistoryOfAnotherNodesSessionIsRefusedWithoutRemoteControl(t *testing.T) {
	m, _ := startTrustMesh(t)
	n0 := m.nodes[0]
	n1 := m.join("tw1", m.token(false, 0, 0), false)
	const secret = "the owner's secret prompt"
	res, err := n0.Tasks().Do(tasks.Action{Op: tasks.OpStart, Command: "cat", Workdir: t.TempDir(), Text: secret})
	if err != nil {
		t.Fatal(err)
	}
	if res.Session == "" || res.Task == nil {
		t.Fatalf("start: %+v", res)
	}
	task := res.Task.ID
	cl := asMember(t, n1, n0)
	call := func(a tasks.Action) (*api.TaskResponse, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return cl.Task(ctx, &api.TaskRequest{Action: tasks.ActionToAPI(a), Node: n0.cfg.Name})
	}
	reads := []struct {
		name string
		a    tasks.Action
	}{
		{"history", tasks.Action{Op: tasks.OpHistory, Session: res.Session}},
		{"history of the stored ring", tasks.Action{Op: tasks.OpHistory, Session: "no-such-hosted-session"}},
		{"show", tasks.Action{Op: tasks.OpShow, Task: task}},
		{"events", tasks.Action{Op: tasks.OpEvents, Task: task}},
		{"grants", tasks.Action{Op: tasks.OpGrants, Task: task}},
		{"digest", tasks.Action{Op: tasks.OpDigest, Task: task}},
		{"usage", tasks.Action{Op: tasks.OpUsage}},
	}
	for _, r := range reads {
		out, err := call(r.a)
		if status.Code(err) != codes.PermissionDenied {
			t.Errorf("%s under --remote-control off: answered %v (%v), want PermissionDenied", r.name, status.Code(err), err)
			continue
		}
		if out != nil || strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the refusal carries the session: %v %+v", r.name, err, out)
		}
		if !strings.Contains(err.Error(), "remote control refused") {
			t.Errorf("%s: the refusal does not say why: %v", r.name, err)
		}
	}
	// harn ask --fork of the session from another node is a remote start:
	// refused, and no session opens.
	before := len(n0.Sessions(false))
	fork := tasks.Action{Op: tasks.OpStart, Agent: tasks.AgentHarn, Text: "what did it say?",
		Harn: &tasks.HarnOptions{Provider: "openai", Model: "m", Fork: res.Session}}
	if _, err := call(fork); status.Code(err) != codes.PermissionDenied {
		t.Errorf("ask --fork under --remote-control off: %v, want PermissionDenied", err)
	}
	if after := len(n0.Sessions(false)); after != before {
		t.Errorf("a refused fork opened a session: %d sessions, were %d", after, before)
	}
	// harn usage on the member sums its own ledger and names the refusing
	// node as missing.
	var msg string
	waitFor(t, 15*time.Second, "usage names tw0 as refusing", func() bool {
		out, err := n1.taskSvc.UsageMesh(context.Background(), tasks.Action{Op: tasks.OpUsage})
		if err != nil {
			return false
		}
		r, err := tasks.ResultFromAPI(out.Result)
		msg = r.Message
		return err == nil && strings.Contains(msg, "tw0 (") && strings.Contains(msg, "remote control refused")
	})
	if strings.Contains(msg, secret) {
		t.Errorf("usage's message carries the session: %s", msg)
	}
	// harn context has no cluster route: the mesh's Cluster service does
	// not answer it at all.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cc := mustDial(t, n0.RPCAddr(), credentials.NewTLS(trust.ClientTLS(n1.cl.Parts().Trust.Holder())))
	if err := cc.Invoke(ctx, "/harn.v1.Cluster/Context", &api.ContextRequest{Session: res.Session}, &api.ContextResponse{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("context over the cluster service: %v, want Unimplemented", err)
	}
	// The control: a policy naming the caller lets show through.
	n0.cfg.Cluster.RemoteControl = "tw1"
	out, err := call(tasks.Action{Op: tasks.OpShow, Task: task})
	if err != nil {
		t.Fatalf("show with --remote-control tw1: %v", err)
	}
	if r, err := tasks.ResultFromAPI(out.Result); err != nil || r.Task == nil || r.Task.ID != task {
		t.Fatalf("show with --remote-control tw1: %+v %v", r, err)
	}
}

// TestPendingDetailGoesOnlyToCallersTheRemoteControlPolicyNames lists an
// open permission request of node tw0 from a member's node-role
// certificate: under the default --remote-control off the member sees the
// request's summary (which session waits where) but not the command in
// full, and its answer is refused; once the policy names it, the detail
// comes too.
func TestPendingDetailGoesOnlyToCallersTheRemoteControlPolicyNames(t *testing.T) {
	m, _ := startTrustMesh(t)
	n0 := m.nodes[0]
	n1 := m.join("tw1", m.token(false, 0, 0), false)
	const detail = "curl -H 'Authorization: Bearer s3cr3t' https://example.com"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		n0.Tasks().Approvals().Await(ctx, tasks.Request{Session: "s1", Agent: "claude-code", Tool: "Bash", Summary: "curl", Detail: detail,
			Facts: taskwire.Facts{Command: detail, Cwd: "/w", Path: "/w/a", Diff: "+Bearer s3cr3t"}}, time.Minute)
	}()
	defer func() { cancel(); <-done }()
	waitFor(t, 10*time.Second, "the request opens", func() bool { return len(n0.Tasks().Approvals().List()) == 1 })
	cl := asMember(t, n1, n0)
	list := func() []*api.PermissionRequest {
		t.Helper()
		rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer rcancel()
		res, err := cl.Pending(rctx, &api.PendingRequest{LocalOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Requests) != 1 {
			t.Fatalf("pending: %+v", res.Requests)
		}
		return res.Requests
	}
	r := list()[0]
	if r.Detail != "" || r.Command != "" || r.Path != "" || r.Diff != "" || r.Cwd != "/w" || r.Summary != "curl" || r.Session != "s1" {
		t.Errorf("under --remote-control off a member got %+v, want the summary without the detail", r)
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer rcancel()
	if _, err := cl.Answer(rctx, &api.AnswerRequest{Request: r.Id, Allow: true, LocalOnly: true}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("answer under --remote-control off: %v, want PermissionDenied", err)
	}
	if len(n0.Tasks().Approvals().List()) != 1 {
		t.Fatal("the refused answer closed the request")
	}
	n0.cfg.Cluster.RemoteControl = "tw1"
	if r := list()[0]; r.Detail != detail || r.Command != detail || r.Path != "/w/a" || r.Diff != "+Bearer s3cr3t" {
		t.Errorf("with --remote-control tw1 the request is %+v, want the call in full", r)
	}
}
