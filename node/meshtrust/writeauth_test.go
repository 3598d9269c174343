package meshtrust

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/raftstore"
)

// TestEveryRegistryOpHasAWriteRule enumerates the ops raftstore defines
// (raftstore.Ops, itself checked against the package's source): each must
// have a rule, and the table must have no rule for an op that does not
// exist.
func TestEveryRegistryOpHasAWriteRule(t *testing.T) {
	for _, op := range raftstore.Ops() {
		r, ok := writeRules[op]
		if !ok || r.check == nil || r.who == "" {
			t.Errorf("registry op %q has no write-authority rule: add one to writeRules", op)
		}
	}
	if len(writeRules) != len(raftstore.Ops()) {
		t.Errorf("writeRules has %d rules for %d ops", len(writeRules), len(raftstore.Ops()))
	}
}

func TestRegistryOpWithoutARuleIsRefused(t *testing.T) {
	a := fakeAuthority(nil, nil)
	srv := trust.Identity{Name: "s0", Role: trust.RoleServer, Serial: "1"}
	err := a.check(srv, raftstore.Command{Op: "compact_everything"})
	var re *trust.RefusalError
	if !errors.Is(err, ErrWriteOpUnknown) || !errors.As(err, &re) || !strings.Contains(err.Error(), srv.String()) {
		t.Fatalf("an op with no rule, from a server: %v", err)
	}
}

// fakeAuthority reads owners (session -> node) and claims.
func fakeAuthority(owners map[string]string, claims map[string][]raftstore.Claim, admins ...string) *writeAuthority {
	return &writeAuthority{
		owner: func(id string) (string, bool) {
			n, ok := owners[id]
			return n, ok
		},
		claimsOf:     func(id string) []raftstore.Claim { return claims[id] },
		notifyAdmins: admins,
	}
}

var (
	idLaptop = trust.Identity{Name: "laptop", Role: trust.RoleNode, Serial: "1a"}
	idDesk   = trust.Identity{Name: "desk", Role: trust.RoleNode, Serial: "2b"}
	idSrv    = trust.Identity{Name: "srv", Role: trust.RoleServer, Serial: "3c"}
)

func TestClaimOnlyInTheNameOfAnOwnSession(t *testing.T) {
	a := fakeAuthority(map[string]string{"desk-1": "desk", "laptop-1": "laptop"}, nil)
	now := time.Now()
	for _, tc := range []struct {
		name   string
		caller trust.Identity
		cmd    raftstore.Command
		allow  bool
	}{
		{"own session", idLaptop, raftstore.ClaimCmd("laptop-1", "laptop", "r", now, "a.go"), true},
		{"own session before its record", idLaptop, raftstore.ClaimCmd("new", "laptop", "r", now, "a.go"), true},
		{"another node's session", idLaptop, raftstore.ClaimCmd("desk-1", "laptop", "r", now, "a.go"), false},
		{"another node's session in its name", idLaptop, raftstore.ClaimCmd("desk-1", "desk", "r", now, "a.go"), false},
		{"a new session in another node's name", idLaptop, raftstore.ClaimCmd("new", "desk", "r", now, "a.go"), false},
		{"a server in a node's session's name", idSrv, raftstore.ClaimCmd("desk-1", "desk", "r", now, "a.go"), false},
		{"anonymous", trust.Identity{}, raftstore.ClaimCmd("new", "", "r", now, "a.go"), false},
	} {
		err := a.check(tc.caller, tc.cmd)
		if (err == nil) != tc.allow {
			t.Errorf("%s: %v, want allow=%v", tc.name, err, tc.allow)
		}
		var re *trust.RefusalError
		if err != nil && !errors.As(err, &re) {
			t.Errorf("%s: refusal %v does not name the caller", tc.name, err)
		}
	}
}

func TestReleaseOnlyByTheOwnerOrAServer(t *testing.T) {
	a := fakeAuthority(map[string]string{"desk-1": "desk"},
		map[string][]raftstore.Claim{"orphan": {{Repo: "r", Path: "a.go", SessionID: "orphan", Node: "desk"}}})
	for _, tc := range []struct {
		name    string
		caller  trust.Identity
		session string
		allow   bool
	}{
		{"owner", idDesk, "desk-1", true},
		{"another node", idLaptop, "desk-1", false},
		{"a server (housekeeping)", idSrv, "desk-1", true},
		{"owner by its claims (no record)", idDesk, "orphan", true},
		{"another node, no record", idLaptop, "orphan", false},
		{"no owner known", idLaptop, "nobody", false},
		{"no owner known, a server", idSrv, "nobody", true},
	} {
		err := a.check(tc.caller, raftstore.ReleaseCmd(tc.session, "", true))
		if (err == nil) != tc.allow {
			t.Errorf("%s: %v, want allow=%v", tc.name, err, tc.allow)
		}
		if err != nil && (!errors.Is(err, trust.ErrNotOwner) || !strings.Contains(err.Error(), tc.caller.String())) {
			t.Errorf("%s: refusal %v", tc.name, err)
		}
	}
}

func TestWebhooksOnlyFromServersOrNotifyAdmins(t *testing.T) {
	a := fakeAuthority(nil, nil, "desk")
	set := raftstore.NotifySetCommand("wh-1", []byte(`{"url":"https://example.com/x"}`))
	rm := raftstore.NotifyRemoveCommand("wh-1")
	for _, tc := range []struct {
		caller trust.Identity
		allow  bool
	}{{idSrv, true}, {idDesk, true}, {idLaptop, false}, {trust.Identity{Role: trust.RoleServer}, false}} {
		for _, cmd := range []raftstore.Command{set, rm} {
			err := a.check(tc.caller, cmd)
			if (err == nil) != tc.allow {
				t.Errorf("%s %s: %v, want allow=%v", tc.caller, cmd.Op, err, tc.allow)
			}
			if err != nil && (!errors.Is(err, ErrNotNotifyAdmin) || !strings.Contains(err.Error(), "--notify-admins")) {
				t.Errorf("refusal %v", err)
			}
		}
	}
}

// TestWriteRulesNeverLetANodeTouchAnotherNodesState is the table's
// property: whatever the command and the registry's owners, a node-role
// caller is allowed a write only when every session it names is its own
// (or unowned and claimed for itself), never a housekeeping op, and never
// the webhooks unless the policy names it; an anonymous caller nothing.
func TestWriteRulesNeverLetANodeTouchAnotherNodesState(t *testing.T) {
	nodes := []string{"a", "b", "c"}
	sessions := []string{"s1", "s2", "s3"}
	rapid.Check(t, func(t *rapid.T) {
		owners := map[string]string{}
		for _, s := range sessions {
			if o := rapid.SampledFrom(append([]string{""}, nodes...)).Draw(t, "owner "+s); o != "" {
				owners[s] = o
			}
		}
		admins := rapid.SliceOfDistinct(rapid.SampledFrom(nodes), rapid.ID[string]).Draw(t, "admins")
		a := fakeAuthority(owners, nil, admins...)
		anon := rapid.IntRange(0, 9).Draw(t, "anon") == 0
		caller := trust.Identity{Name: rapid.SampledFrom(nodes).Draw(t, "caller"), Role: trust.RoleNode, Serial: "1"}
		if anon {
			caller = trust.Identity{}
		}
		session := rapid.SampledFrom(sessions).Draw(t, "session")
		named := rapid.SampledFrom(nodes).Draw(t, "named")
		now := time.Unix(1e9, 0)
		var cmd raftstore.Command
		op := rapid.SampledFrom(raftstore.Ops()).Draw(t, "op")
		switch op {
		case raftstore.OpUpsert, raftstore.OpBatch:
			u := raftstore.Upsert{SessionID: session, TS: now}
			if rapid.Bool().Draw(t, "identity") {
				u.Identity = &raftstore.IdentityPatch{Node: named}
			}
			if rapid.Bool().Draw(t, "end") || u.Identity == nil {
				u.End = &raftstore.EndPatch{Ended: true}
			}
			cmd = raftstore.Command{Op: op, Upserts: []raftstore.Upsert{u}}
		case raftstore.OpDelete:
			cmd = raftstore.DeleteCommand(session)
		case raftstore.OpKV:
			cmd = raftstore.KVCommand(raftstore.KVOp{Key: "trust/revoked/00", Value: []byte("{}")})
		case raftstore.OpClaim:
			cmd = raftstore.ClaimCmd(session, named, "r", now, "x.go")
		case raftstore.OpRelease:
			cmd = raftstore.ReleaseCmd(session, "", true)
		case raftstore.OpNotifySet:
			cmd = raftstore.NotifySetCommand("wh", json.RawMessage(`{}`))
		case raftstore.OpNotifyRemove:
			cmd = raftstore.NotifyRemoveCommand("wh")
		default:
			t.Fatalf("op %q is not drawn: extend the property", op)
		}
		err := a.check(caller, cmd)
		if anon {
			if err == nil {
				t.Fatalf("an anonymous caller was allowed %s", op)
			}
			return
		}
		owner := owners[session]
		switch op {
		case raftstore.OpDelete, raftstore.OpKV:
			if err == nil {
				t.Fatalf("node %s was allowed housekeeping op %s", caller.Name, op)
			}
		case raftstore.OpNotifySet, raftstore.OpNotifyRemove:
			want := false
			for _, n := range admins {
				want = want || n == caller.Name
			}
			if (err == nil) != want {
				t.Fatalf("node %s, admins %v, %s: %v", caller.Name, admins, op, err)
			}
		case raftstore.OpClaim:
			if err == nil && (named != caller.Name || owner != "" && owner != caller.Name) {
				t.Fatalf("node %s claimed in %s's name for a session of %q", caller.Name, named, owner)
			}
		case raftstore.OpRelease:
			if err == nil && owner != caller.Name {
				t.Fatalf("node %s released a session of %q", caller.Name, owner)
			}
		default:
			u := cmd.Upserts[0]
			eff := owner
			if eff == "" && u.Identity != nil {
				eff = u.Identity.Node
			}
			if err == nil && eff != caller.Name {
				t.Fatalf("node %s wrote a session of %q: %+v", caller.Name, eff, u)
			}
		}
	})
}
