package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoctorAsksTheRunningNode: `harn doctor` run with none of the node's
// flags reports the ports the node was started on and its TLS state (it
// used to check the defaults); an old diagnostic cleared with `harn node
// errors --clear` is no longer a finding.
func TestDoctorAsksTheRunningNode(t *testing.T) {
	e := newEnv(t)
	ps := freePorts(t, 3)
	e.startNode("--gossip-port", fmt.Sprint(ps[0]), "--raft-port", fmt.Sprint(ps[1]), "--rpc-port", fmt.Sprint(ps[2]))
	home := filepath.Join(e.root, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(e.hookEnv(), "HOME="+home)
	var rep struct {
		Findings int `json:"findings"`
		Checks   []struct{ Check, Status, Detail, Fix string }
		Node     struct {
			Role  string `json:"role"`
			Ports struct{ Gossip, Raft, RPC string }
			TLS   struct {
				Mode     string `json:"mode"`
				NotAfter string `json:"not_after"`
			} `json:"tls"`
			Raft *struct {
				Leader string `json:"leader"`
				Voters int    `json:"voters"`
				Quorum bool   `json:"quorum"`
			} `json:"raft"`
		} `json:"node"`
	}
	r := run(t, env, "", "doctor", "--json")
	mustJSON(t, r.stdout, &rep)
	n := rep.Node
	for i, got := range []string{n.Ports.Gossip, n.Ports.Raft, n.Ports.RPC} {
		if !strings.HasSuffix(got, fmt.Sprintf(":%d", ps[i])) {
			t.Errorf("port %d: doctor reports %q, the node was started on %d", i, got, ps[i])
		}
	}
	if n.TLS.Mode != "lone-ca" || n.TLS.NotAfter == "" {
		t.Errorf("tls: %+v; want the lone node's own CA and its certificate's expiry", n.TLS)
	}
	if n.Raft == nil || n.Raft.Leader == "" || n.Raft.Voters != 1 || !n.Raft.Quorum {
		t.Errorf("raft: %+v", n.Raft)
	}
	if r.code != 0 || rep.Findings != 0 {
		t.Fatalf("a clean node has findings (exit %d): %s", r.code, r.stdout)
	}
	for _, c := range rep.Checks {
		if strings.HasPrefix(c.Check, "port ") {
			t.Errorf("doctor probed a default port instead of asking the node: %+v", c)
		}
	}

	// A bad payload is a finding until it is cleared.
	e.hook("claude-code", "not json")
	if r := run(t, env, "", "doctor"); r.code != 10 || !strings.Contains(r.stdout, "FINDING hook diagnostics: 1 in the last hour") ||
		!strings.Contains(r.stdout, "harn node errors --clear") {
		t.Fatalf("doctor after a bad payload: %v", r)
	}
	if r := run(t, env, "", "node", "errors", "--clear"); r.code != 0 || !strings.Contains(r.stdout, "not a JSON object") {
		t.Fatalf("errors --clear: %v", r)
	}
	if out := e.ok("node", "errors"); !strings.Contains(out, "no diagnostics") {
		t.Fatalf("after --clear: %s", out)
	}
	if r := run(t, env, "", "doctor"); r.code != 0 {
		t.Fatalf("doctor after --clear: %v", r)
	}
}
