package e2e

import (
	"slices"
	"strings"
	"testing"
)

// TestMeshAdminThroughTheCLI: the operator's mesh trust commands reach the
// node's MeshAdmin service and print their answers: a token made is
// listed and gone once revoked, a gossip key installed is in the
// registry's keyring and removed again, and the CA's status names one
// current root that this node's certificate is from.
func TestMeshAdminThroughTheCLI(t *testing.T) {
	s0 := newMeshNode(t, "s0", "--server")
	s0.ok("mesh", "init", "--name", "s0", "--json")
	s0.start()
	eventually(t, meshTimeout, "s0 leads", func() (bool, string) {
		r, ok, why := s0.raftState()
		return ok && r.Leader == "s0", why
	})

	var tok struct {
		JoinToken string `json:"join_token"`
		ID        string `json:"id"`
		Role      string `json:"role"`
	}
	mustJSON(t, s0.ok("token", "create", "--uses", "2", "--json"), &tok)
	if !strings.HasPrefix(tok.JoinToken, "harn1.") || tok.ID == "" || tok.Role != "node" {
		t.Fatalf("token create printed %+v", tok)
	}
	type record struct {
		ID   string `json:"id"`
		Role string `json:"role"`
		Uses int    `json:"uses"`
	}
	var recs []record
	mustJSON(t, s0.ok("token", "list", "--json"), &recs)
	if !slices.Contains(recs, record{ID: tok.ID, Role: "node", Uses: 2}) {
		t.Fatalf("token list has no %s: %+v", tok.ID, recs)
	}
	s0.ok("token", "revoke", tok.ID)
	recs = nil
	mustJSON(t, s0.ok("token", "list", "--json"), &recs)
	for _, r := range recs {
		if r.ID == tok.ID {
			t.Fatalf("token %s is listed after its revocation", tok.ID)
		}
	}

	type keyring struct {
		Primary     string   `json:"primary"`
		Keys        []string `json:"keys"`
		NodePrimary string   `json:"node_primary"`
		NodeKeys    []string `json:"node_keys"`
	}
	key := strings.TrimSpace(s0.ok("keygen"))
	var kr keyring
	mustJSON(t, s0.ok("keyring", "install", key, "--json"), &kr)
	if !slices.Contains(kr.Keys, key) || kr.Primary == key {
		t.Fatalf("keyring install: %+v", kr)
	}
	kr = keyring{}
	mustJSON(t, s0.ok("keyring", "list", "--json"), &kr)
	if !slices.Contains(kr.Keys, key) || kr.NodePrimary == "" {
		t.Fatalf("keyring list: %+v", kr)
	}
	kr = keyring{}
	mustJSON(t, s0.ok("keyring", "remove", key, "--json"), &kr)
	if slices.Contains(kr.Keys, key) {
		t.Fatalf("keyring remove: %+v", kr)
	}

	var ca struct {
		Roots     []string `json:"roots"`
		Rotating  bool     `json:"rotating"`
		OnCurrent bool     `json:"on_current"`
	}
	mustJSON(t, s0.ok("mesh", "ca", "status", "--json"), &ca)
	if len(ca.Roots) != 1 || ca.Rotating || !ca.OnCurrent {
		t.Fatalf("mesh ca status: %+v", ca)
	}
}
