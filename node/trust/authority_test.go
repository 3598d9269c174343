package trust

import (
	"errors"
	"strings"
	"testing"
)

func TestNodeMayWriteOnlySessionsItOwns(t *testing.T) {
	laptop := Identity{Name: "laptop", Role: RoleNode, Serial: "1a"}
	srv := Identity{Name: "srv1", Role: RoleServer, Serial: "2b"}
	for _, tc := range []struct {
		name   string
		caller Identity
		owner  string
		kind   WriteKind
		want   bool
	}{
		{"own session", laptop, "laptop", WriteOwned, true},
		{"another node's session", laptop, "desk", WriteOwned, false},
		{"no owner", laptop, "", WriteOwned, false},
		{"node housekeeping", laptop, "desk", WriteHousekeeping, false},
		{"node housekeeping own", laptop, "laptop", WriteHousekeeping, false},
		{"server own", srv, "srv1", WriteOwned, true},
		{"server another's as owned", srv, "laptop", WriteOwned, false},
		{"server housekeeping", srv, "laptop", WriteHousekeeping, true},
		{"anonymous", Identity{}, "", WriteOwned, false},
		{"anonymous housekeeping", Identity{Role: RoleServer}, "x", WriteHousekeeping, false},
		{"unknown kind", srv, "srv1", WriteKind(9), false},
	} {
		if got := MayWriteSession(tc.caller, tc.owner, tc.kind); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
		err := CheckSessionWrite(tc.caller, tc.owner, tc.kind)
		if (err == nil) != tc.want || (err != nil && !errors.Is(err, ErrNotOwner)) {
			t.Errorf("%s: CheckSessionWrite %v", tc.name, err)
		}
	}
}

func TestSessionWriteRefusalNamesCallersCertificate(t *testing.T) {
	err := CheckSessionWrite(Identity{Name: "laptop", Role: RoleNode, Serial: "1a"}, "desk", WriteOwned)
	var re *RefusalError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), `node "laptop" (role node, cert serial 1a)`) || !strings.Contains(err.Error(), `"desk"`) {
		t.Fatalf("refusal %v", err)
	}
}

func TestRemoteControlPolicy(t *testing.T) {
	a := Identity{Name: "alice", Role: RoleNode, Serial: "1"}
	b := Identity{Name: "bob", Role: RoleServer, Serial: "2"}
	for _, tc := range []struct {
		policy string
		caller Identity
		allow  bool
	}{
		{"", a, false}, {"", b, false}, {"off", a, false}, {"off", b, false},
		{"servers", a, false}, {"servers", b, true}, {"servers", Identity{Role: RoleServer}, false},
		{"servers,alice", a, true}, {"alice", a, true}, {"alice", b, false}, {"alice, bob", b, true},
		{"bob,carol", a, false}, {"alice", Identity{}, false},
	} {
		rc, err := ParseRemoteControl(tc.policy)
		if err != nil {
			t.Fatalf("%q: %v", tc.policy, err)
		}
		err = rc.Allow(tc.caller)
		if (err == nil) != tc.allow {
			t.Errorf("policy %q, caller %s: %v, want allow=%v", tc.policy, tc.caller.Name, err, tc.allow)
		}
		if err != nil && (!errors.Is(err, ErrRemoteControl) || !strings.Contains(err.Error(), tc.caller.String())) {
			t.Errorf("refusal %v does not name the caller's certificate", err)
		}
	}
}

func TestRemoteControlIsOffByDefault(t *testing.T) {
	rc, _ := ParseRemoteControl("")
	var zero RemoteControl
	if rc.String() != DefaultRemoteControl || zero.String() != "off" || DefaultRemoteControl != "off" || !zero.Off() {
		t.Fatal("default is not off")
	}
	if err := zero.Allow(Identity{Name: "s1", Role: RoleServer, Serial: "1"}); !errors.Is(err, ErrRemoteControl) {
		t.Fatalf("the zero policy allowed a server: %v", err)
	}
}

func TestRemoteControlMeshIsGoneAndNamesTheReplacement(t *testing.T) {
	for _, s := range []string{"mesh", " mesh ", "mesh,alice", "alice,mesh"} {
		_, err := ParseRemoteControl(s)
		if !errors.Is(err, ErrPolicyMesh) || !errors.Is(err, ErrBadPolicy) {
			t.Fatalf("%q: %v", s, err)
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "NODE,...") || !strings.Contains(msg, "servers") {
			t.Fatalf("%q: the error must be one line naming the replacement: %q", s, msg)
		}
	}
}

func TestRemoteControlParseRefusesBadValues(t *testing.T) {
	for _, s := range []string{"servers,off", "alice,off", "a b", ",", "alice,,bob", "\x1b[2J"} {
		if _, err := ParseRemoteControl(s); !errors.Is(err, ErrBadPolicy) {
			t.Errorf("%q: %v", s, err)
		}
	}
	rc, _ := ParseRemoteControl(" bob , alice ")
	if rc.String() != "alice,bob" {
		t.Fatalf("String %q", rc.String())
	}
	rc, _ = ParseRemoteControl("bob,servers")
	if rc.String() != "servers,bob" {
		t.Fatalf("String %q", rc.String())
	}
}

func FuzzParseRemoteControl(f *testing.F) {
	for _, s := range []string{"", "off", "mesh", "servers", "a,b", "a,,b", "mesh,a", "servers,a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rc, err := ParseRemoteControl(s)
		if err != nil {
			if !errors.Is(err, ErrBadPolicy) {
				t.Fatalf("untyped %v", err)
			}
			return
		}
		again, err := ParseRemoteControl(rc.String())
		if err != nil || again.String() != rc.String() {
			t.Fatalf("round trip %q -> %q: %v", s, rc.String(), err)
		}
	})
}
