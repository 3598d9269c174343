package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/node/api"
)

func TestDoctorRaftFindings(t *testing.T) {
	cases := []struct {
		name  string
		raft  *api.DoctorRaft
		finds []string
	}{
		{"three servers, all up", &api.DoctorRaft{Leader: "a", Voters: 3, Alive: 3, Quorum: true}, nil},
		{"two servers cannot lose one", &api.DoctorRaft{Leader: "a", Voters: 2, Alive: 2, Quorum: true}, []string{"raft servers"}},
		{"no leader", &api.DoctorRaft{Voters: 3, Alive: 1}, []string{"raft"}},
		{"leader without quorum", &api.DoctorRaft{Leader: "a", Voters: 3, Alive: 1}, []string{"raft"}},
		{"stale peer", &api.DoctorRaft{Leader: "a", Voters: 1, Alive: 1, Quorum: true,
			StalePeers: []string{"b: 10.0.0.2:7711 (advertises 10.0.0.2:8711)"}}, []string{"raft peer"}},
	}
	for _, c := range cases {
		var got []string
		for _, ch := range checkRaft(c.raft) {
			if ch.Status == checkFinding {
				got = append(got, ch.Check)
				if ch.Fix == "" {
					t.Errorf("%s: finding %q has no fix", c.name, ch.Detail)
				}
			}
		}
		if strings.Join(got, ",") != strings.Join(c.finds, ",") {
			t.Errorf("%s: findings %v, want %v", c.name, got, c.finds)
		}
	}
}

func TestDoctorCertificateExpiry(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *api.DoctorTLS {
		return &api.DoctorTLS{Mode: "mesh-ca", Subject: "n1", NotAfter: api.NewTime(now.Add(d))}
	}
	if c := checkTLS(now, at(300*24*time.Hour)); c.Status != checkOK {
		t.Errorf("valid: %+v", c)
	}
	if c := checkTLS(now, at(48*time.Hour)); c.Status != checkFinding || !strings.Contains(c.Detail, "expires in") {
		t.Errorf("expiring: %+v", c)
	}
	if c := checkTLS(now, at(-time.Hour)); c.Status != checkFinding || !strings.Contains(c.Detail, "expired") {
		t.Errorf("expired: %+v", c)
	}
	if c := checkTLS(now, &api.DoctorTLS{Mode: "plaintext"}); c.Status != checkFinding {
		t.Errorf("plaintext: %+v", c)
	}
	if c := checkTLS(now, &api.DoctorTLS{Mode: "off"}); c.Status != checkSkip {
		t.Errorf("no mesh: %+v", c)
	}
}

// TestDoctorSaysWhereTheRegistryIsReadAndHowManyNodesTheServersHold: a
// node that follows a server's watch is told so; a stale view, or no
// server answering, is a finding; past ServersHold nodes the servers'
// load is one.
func TestDoctorSaysWhereTheRegistryIsReadAndHowManyNodesTheServersHold(t *testing.T) {
	find := func(r *api.DoctorRaft, name string) (check, bool) {
		for _, c := range checkRegistryView(r) {
			if c.Check == name {
				return c, true
			}
		}
		return check{}, false
	}
	if c, ok := find(&api.DoctorRaft{State: "Watch", Watch: "s1", Voters: 3, Members: 40}, "registry"); !ok || c.Status != checkOK {
		t.Fatalf("a fresh watch: %+v %v", c, ok)
	}
	if c, ok := find(&api.DoctorRaft{State: "Watch", Watch: "s1", Stale: true, LastContact: "9s"}, "registry"); !ok || c.Status != checkFinding {
		t.Fatalf("a stale watch: %+v %v", c, ok)
	}
	if c, ok := find(&api.DoctorRaft{State: "Watch"}, "registry"); !ok || c.Status != checkFinding {
		t.Fatalf("no server answering: %+v %v", c, ok)
	}
	if _, ok := find(&api.DoctorRaft{State: "Leader", Voters: 3, Members: ServersHold}, "registry load"); ok {
		t.Fatal("a load finding at ServersHold nodes")
	}
	if c, ok := find(&api.DoctorRaft{State: "Leader", Voters: 3, Members: ServersHold + 1}, "registry load"); !ok || c.Status != checkFinding {
		t.Fatalf("past ServersHold nodes: %+v %v", c, ok)
	}
}
