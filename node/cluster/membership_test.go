package cluster

import (
	"testing"

	"github.com/harn-dev/harn/mesh"
)

// TestRaftMembersAreServersAndReplicas: servers vote, read replicas and
// nodes of an earlier landing (a client that advertises a raft address)
// are non-voters, and a node of this landing that is neither holds no
// raft log and is no member.
func TestRaftMembersAreServersAndReplicas(t *testing.T) {
	for _, tc := range []struct {
		meta          mesh.NodeMeta
		voter, member bool
	}{
		{mesh.NodeMeta{Role: mesh.RoleServer, RaftAddr: "a:1"}, true, true},
		{mesh.NodeMeta{Role: mesh.RoleReplica, RaftAddr: "a:1"}, false, true},
		{mesh.NodeMeta{Role: mesh.RoleClient, RaftAddr: "a:1"}, false, true}, // an earlier landing's node
		{mesh.NodeMeta{Role: mesh.RoleClient}, false, false},
		{mesh.NodeMeta{Role: mesh.RoleServer}, false, false}, // no raft address yet
		{mesh.NodeMeta{RaftAddr: "a:1"}, false, false},       // leaving
	} {
		voter, member := raftRole(tc.meta)
		if voter != tc.voter || member != tc.member {
			t.Errorf("%+v: voter %v member %v, want %v %v", tc.meta, voter, member, tc.voter, tc.member)
		}
	}
}
