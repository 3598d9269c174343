package node

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/apigrpc"
	"github.com/harn-dev/harn/node/remotepolicy"
	"github.com/harn-dev/harn/node/tasks"
)

// TestRemoteForkOfAContextFollowsTheRemoteControlPolicy: a mesh member
// that the node's --remote-control policy does not name may not fork a
// harn session's context there (harn ask --node N --fork SESSION): the
// start is refused before anything opens, and no context is made. A
// member the policy names gets past the gate (here the fork then fails
// on its unknown source, not on the policy).
func TestRemoteForkOfAContextFollowsTheRemoteControlPolicy(t *testing.T) {
	m, _ := startTrustMesh(t)
	n0 := m.nodes[0]
	n1 := m.join("tw1", m.token(false, 0, 0), false)
	var cl apigrpc.ClusterClient
	mesh.WaitFor(t, 15*time.Second, "tw1 knows tw0's cluster address", func() bool {
		c, err := n1.cl.ClientOf("tw0")
		cl = c
		return err == nil
	})
	ws := t.TempDir()
	n0.remotePol.Workspaces = []string{remotepolicy.Resolve(ws)} // a remote session works in one
	fork := func() error {
		a := tasks.Action{Op: tasks.OpStart, Agent: "harn", Text: "go on", Workdir: ws,
			Harn: &tasks.HarnOptions{Provider: "openai", Model: "gpt-4o", Fork: "h-victim"}}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := cl.Task(ctx, &api.TaskRequest{Action: tasks.ActionToAPI(a), Node: "tw0"})
		return err
	}
	for _, policy := range []string{"", "off", "servers", "tw2"} {
		n0.cfg.Cluster.RemoteControl = policy
		err := fork()
		if status.Code(err) != codes.PermissionDenied || !strings.Contains(status.Convert(err).Message(), "--remote-control") {
			t.Fatalf("policy %q: a remote fork must be refused by the policy: %v", policy, err)
		}
	}
	if v, err := n0.tasks.Context("h-victim", false); err == nil {
		t.Fatalf("a refused fork left a context: %s", v.Report)
	}
	n0.cfg.Cluster.RemoteControl = "tw1"
	err := fork()
	if err == nil || status.Code(err) == codes.PermissionDenied {
		t.Fatalf("policy tw1: the fork must pass the gate and fail on its unknown source: %v", err)
	}
	if !strings.Contains(status.Convert(err).Message(), "h-victim") {
		t.Fatalf("policy tw1: %v", err)
	}
}

// TestContextIsNotServedToTheMesh: a session's context is read on the
// local socket only (the node's own user); the cluster service, which
// other members call, has no method that returns one.
func TestContextIsNotServedToTheMesh(t *testing.T) {
	ty := reflect.TypeOf((*apigrpc.ClusterServer)(nil)).Elem()
	for i := 0; i < ty.NumMethod(); i++ {
		name := ty.Method(i).Name
		if strings.Contains(name, "Context") || strings.Contains(name, "Recall") {
			t.Errorf("the cluster service has %s: a context read must check the caller as a task action does", name)
		}
	}
	if _, ok := reflect.TypeOf((*api.LocalServer)(nil)).Elem().MethodByName("Context"); !ok {
		t.Fatal("the local service lost Context")
	}
}
