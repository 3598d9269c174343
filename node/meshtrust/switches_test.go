package meshtrust

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/raftstore"
)

func overrideOp(t *testing.T, v Switch) raftstore.KVOp {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raftstore.KVOp{Key: SwitchKey(v.Kind, v.Name), Value: b}
}

// A mesh member may set a switch only in its own name; a forged author,
// a key that is not the switch's own, or a delete is refused at the
// leader. Other key-value writes keep the server-only rule.
func TestAForwardedSwitchWriteInAnotherNodesNameIsRefused(t *testing.T) {
	authorize := func(caller trust.Identity, cmd raftstore.Command) error {
		return (&writeAuthority{owner: func(string) (string, bool) { return "", false },
			claimsOf: func(string) []raftstore.Claim { return nil }}).check(caller, cmd)
	}
	n1 := trust.Identity{Name: "n1", Role: trust.RoleNode, Serial: "01"}
	own := overrideOp(t, Switch{Kind: SwitchCapability, Name: "Bash", On: true, By: "operator@n1"})
	if err := authorize(n1, raftstore.KVCommand(own)); err != nil {
		t.Fatalf("a switch in the caller's own name: %v", err)
	}
	forged := overrideOp(t, Switch{Kind: SwitchProvider, Name: "mcp", By: "operator@s0"})
	wrongKey := own
	wrongKey.Key = SwitchKey(SwitchProvider, "Bash")
	del := raftstore.KVOp{Key: own.Key, Delete: true}
	for name, op := range map[string]raftstore.KVOp{"forged author": forged, "wrong key": wrongKey, "delete": del} {
		err := authorize(n1, raftstore.KVCommand(op))
		if !errors.Is(err, trust.ErrNotOwner) {
			t.Fatalf("%s: %v", name, err)
		}
	}
	// Mixed with a trust key: the server-only rule applies to the whole.
	mixed := raftstore.KVCommand(own, raftstore.KVOp{Key: KVRevokedPrefix + "ff", Value: []byte("x")})
	if err := authorize(n1, mixed); !errors.Is(err, trust.ErrNotOwner) {
		t.Fatalf("a node's write of a trust key beside a switch: %v", err)
	}
}

func TestSwitchNamesAreChecked(t *testing.T) {
	for _, bad := range [][2]string{{"tool", "Bash"}, {SwitchCapability, ""}, {SwitchCapability, "Bash(git *)"}, {SwitchProvider, "a b"}} {
		if err := CheckSwitch(bad[0], bad[1]); !errors.Is(err, ErrBadSwitch) {
			t.Fatalf("%q: %v", bad, err)
		}
	}
	if err := CheckSwitch(SwitchCapability, "mcp__github__*"); err != nil {
		t.Fatal(err)
	}
}

// Lifting a switch gives authority back: a node may lift only a switch it
// set itself; a server may lift any. Setting one stays open to every
// member, in its own name.
func TestOnlyTheSetterOrAServerMayLiftASwitch(t *testing.T) {
	n1 := trust.Identity{Name: "n1", Role: trust.RoleNode, Serial: "01"}
	n2 := trust.Identity{Name: "n2", Role: trust.RoleNode, Serial: "02"}
	s0 := trust.Identity{Name: "s0", Role: trust.RoleServer, Serial: "03"}
	set := Switch{Kind: SwitchCapability, Name: "Bash", On: true, By: "ana (uid 1000)@n1"}
	prev := func(key string) (Switch, bool) {
		if key == SwitchKey(set.Kind, set.Name) {
			return set, true
		}
		return Switch{}, false
	}
	lift := func(by string) raftstore.Command {
		return raftstore.KVCommand(overrideOp(t, Switch{Kind: SwitchCapability, Name: "Bash", By: by}))
	}
	if _, err := authorizeSwitch(n2, lift("bo (uid 1001)@n2"), prev); !errors.Is(err, trust.ErrNotOwner) {
		t.Fatalf("another node lifted n1's revocation: %v", err)
	}
	if _, err := authorizeSwitch(n1, lift("ana (uid 1000)@n1"), prev); err != nil {
		t.Fatalf("the setter lifting its own switch: %v", err)
	}
	if _, err := authorizeSwitch(s0, lift("root (uid 0)@s0"), prev); err != nil {
		t.Fatalf("a server lifting a switch: %v", err)
	}
	other := raftstore.KVCommand(overrideOp(t, Switch{Kind: SwitchProvider, Name: "mcp", On: true, By: "bo (uid 1001)@n2"}))
	if _, err := authorizeSwitch(n2, other, prev); err != nil {
		t.Fatalf("a member setting a switch in its own name: %v", err)
	}
}
