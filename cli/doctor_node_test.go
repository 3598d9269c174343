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
