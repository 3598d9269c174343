package e2e

import (
	"strings"
	"testing"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
)

// remoteControlMesh is a keyed two-node mesh (s0 the server, n1 joined
// with a token) in which each node lets the other act on it: s0 allows
// n1 by name, n1 allows the servers.
func remoteControlMesh(t *testing.T) (s0, n1 *meshNode) {
	t.Helper()
	return trustedMeshOf(t, []string{"--remote-control", "n1"}, []string{"--remote-control", "servers"})
}

// TestUsageByNodeSumsBothNodesOfAMeshAndNamesAStoppedOne: one `harn ask`
// on s0 and two on n1; `harn usage --by node --json` on either node shows
// each node's tokens from its own ledger. With n1 stopped, s0's answer
// keeps its own row and names n1 as missing on stderr.
func TestUsageByNodeSumsBothNodesOfAMeshAndNamesAStoppedOne(t *testing.T) {
	s0, n1 := remoteControlMesh(t)
	m := modeltest.New(t, modeltest.Text("from s0"), modeltest.Text("from n1"), modeltest.Text("again n1"))
	for _, a := range []struct {
		n    *meshNode
		want string
	}{{s0, "from s0"}, {n1, "from n1"}, {n1, "again n1"}} {
		if r := run(t, append(a.n.hookEnv(), "HARN_PROVIDER_KEY=k"), "", modelArgs(m, "hi")...); r.code != 0 || strings.TrimSpace(r.stdout) != a.want {
			t.Fatalf("ask on %s: %v", a.n.name, r)
		}
	}
	want := map[string][3]int{"s0": {1, 20, 5}, "n1": {2, 40, 10}}
	for _, on := range []*meshNode{s0, n1} {
		r := on.harn("", "usage", "--by", "node", "--json")
		if r.code != 0 || strings.Contains(r.stderr, "missing") {
			t.Fatalf("usage on %s: %v", on.name, r)
		}
		var rows []usageRowJSON
		mustJSON(t, r.stdout, &rows)
		got := map[string][3]int{}
		for _, u := range rows {
			if u.Key != u.Node || u.Model != "test-model" {
				t.Fatalf("usage on %s: row %+v", on.name, u)
			}
			got[u.Node] = [3]int{u.Calls, u.Input, u.Output}
		}
		if len(got) != 2 || got["s0"] != want["s0"] || got["n1"] != want["n1"] {
			t.Fatalf("usage --by node on %s: %+v, want %v", on.name, rows, want)
		}
	}

	n1.stop()
	r := s0.harn("", "usage", "--by", "node", "--json")
	var rows []usageRowJSON
	mustJSON(t, r.stdout, &rows)
	if r.code != 0 || len(rows) != 1 || rows[0].Node != "s0" || rows[0].Calls != 1 || rows[0].Input != 20 {
		t.Fatalf("usage with n1 stopped: %v", r)
	}
	if !strings.Contains(r.stderr, "usage is missing the ledgers of n1") {
		t.Fatalf("usage with n1 stopped does not name it: %q", r.stderr)
	}
}
