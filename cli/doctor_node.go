package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/util/clock"
	"github.com/harn-dev/harn/util/text"
)

// certWarn is how close to its expiry a node certificate is a finding.
const certWarn = 7 * 24 * time.Hour

// nodeReport is the running node's effective setup, as `harn doctor
// --json` reports it under "node".
type nodeReport struct {
	Name            string    `json:"name"`
	Role            string    `json:"role"`
	DataDir         string    `json:"data_dir"`
	Socket          string    `json:"socket"`
	Version         string    `json:"version"`
	Mesh            bool      `json:"mesh"`
	Ports           nodePorts `json:"ports"`
	TLS             nodeTLS   `json:"tls"`
	GossipEncrypted bool      `json:"gossip_encrypted"`
	Raft            *nodeRaft `json:"raft,omitempty"`
	DiagLastHour    int       `json:"diagnostics_last_hour"`
	DiagTotal       int       `json:"diagnostics_total"`
}

// nodePorts are the addresses the node's listeners are bound to.
type nodePorts struct {
	Gossip string `json:"gossip,omitempty"`
	Raft   string `json:"raft,omitempty"`
	RPC    string `json:"rpc,omitempty"`
	HTTP   string `json:"http,omitempty"`
}

type nodeTLS struct {
	Mode        string `json:"mode"`
	Subject     string `json:"subject,omitempty"`
	Fingerprint string `json:"fingerprint,omitempty"`
	NotAfter    string `json:"not_after,omitempty"`
	CA          string `json:"ca,omitempty"`
}

type nodeRaft struct {
	Leader     string   `json:"leader"`
	State      string   `json:"state"`
	Voters     int      `json:"voters"`
	Alive      int      `json:"alive"`
	Quorum     bool     `json:"quorum"`
	StalePeers []string `json:"stale_peers"`
	Voter      bool     `json:"voter"`
	// Watch is the server this node follows the registry from ("" on a
	// server or replica); Stale and LastContact say how fresh its reads
	// are; Members counts the mesh's alive members.
	Watch       string `json:"watch,omitempty"`
	Stale       bool   `json:"stale"`
	LastContact string `json:"last_contact,omitempty"`
	Members     int    `json:"members"`
}

// askDoctor asks the running node for its setup; nil when it cannot say
// (an older node), and the checks then fall back to this command's flags.
// A node that has just started may not have elected its registry's
// leader yet: it is asked again, a bounded number of times, before "no
// leader" is a finding.
func askDoctor(ctx context.Context, cl *client) *api.DoctorResponse {
	const tries, gap = 6, 500 * time.Millisecond
	var dr *api.DoctorResponse
	for i := 0; i < tries; i++ {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		r, err := cl.api.Doctor(cctx, &api.DoctorRequest{})
		cancel()
		if err != nil {
			return dr
		}
		dr = r
		if dr.Raft == nil || dr.Raft.Leader != "" || i == tries-1 {
			return dr
		}
		if !clock.Sleep(hook.Clk, gap, ctx.Done()) {
			return dr
		}
	}
	return dr
}

func nodeReportOf(dr *api.DoctorResponse) *nodeReport {
	r := &nodeReport{Name: dr.Node, Role: dr.Role, DataDir: dr.DataDir, Socket: dr.Socket, Version: dr.Version,
		Mesh: dr.Mesh, GossipEncrypted: dr.GossipEncrypted, DiagLastHour: int(dr.DiagnosticsLastHour),
		DiagTotal: int(dr.DiagnosticsTotal),
		Ports:     nodePorts{Gossip: dr.GossipAddr, Raft: dr.RaftAddr, RPC: dr.RpcAddr, HTTP: dr.HttpAddr}}
	if t := dr.Tls; t != nil {
		r.TLS = nodeTLS{Mode: t.Mode, Subject: t.Subject, Fingerprint: t.Fingerprint, CA: t.Ca}
		if t.NotAfter != nil {
			r.TLS.NotAfter = t.NotAfter.AsTime().UTC().Format(time.RFC3339)
		}
	}
	if rf := dr.Raft; rf != nil {
		r.Raft = &nodeRaft{Leader: rf.Leader, State: rf.State, Voters: int(rf.Voters), Alive: int(rf.Alive),
			Quorum: rf.Quorum, StalePeers: append([]string{}, rf.StalePeers...), Voter: rf.Voter,
			Watch: rf.Watch, Stale: rf.Stale, LastContact: rf.LastContact, Members: int(rf.Members)}
	}
	return r
}

// checkRunningNode checks what the node itself reports: its listeners,
// TLS and certificate expiry, gossip encryption and the registry's raft.
func checkRunningNode(now time.Time, dr *api.DoctorResponse) []check {
	var out []check
	var ports []string
	for _, p := range [][2]string{{"gossip", dr.GossipAddr}, {"raft", dr.RaftAddr}, {"rpc", dr.RpcAddr}, {"board", dr.HttpAddr}} {
		if p[1] != "" {
			ports = append(ports, p[0]+" "+p[1])
		}
	}
	if len(ports) == 0 {
		out = append(out, check{"ports", checkSkip, "the node opens no network listener", ""})
	} else {
		out = append(out, check{"ports", checkOK, "the node (" + text.Sanitize(dr.Role) + ") listens on " + text.Sanitize(strings.Join(ports, ", ")), ""})
	}
	out = append(out, checkTLS(now, dr.Tls))
	if dr.Mesh && dr.Role == "lone" && !dr.GossipEncrypted {
		out = append(out, check{"gossip key", checkOK, "none (a lone node gossips with no one)", ""})
	} else if dr.Mesh {
		if dr.GossipEncrypted {
			out = append(out, check{"gossip key", checkOK, "the node's gossip is encrypted", ""})
		} else {
			out = append(out, check{"gossip key", checkFinding, "none: the node's gossip with other machines is not encrypted",
				"make one with `harn keygen` and give every node the same one (gossip-key in a config file of mode 0600)"})
		}
	}
	if dr.Raft != nil {
		out = append(out, checkRaft(dr.Raft)...)
	}
	return out
}

func checkTLS(now time.Time, t *api.DoctorTLS) check {
	if t == nil || t.Mode == "off" {
		return check{"tls", checkSkip, "no mesh (--no-mesh)", ""}
	}
	switch t.Mode {
	case "plaintext":
		return check{"tls", checkFinding, "plaintext (--insecure-mesh): raft, gRPC and gossip are neither encrypted nor authenticated",
			"drop --insecure-mesh: a lone node then makes its own CA, and a joining node needs `--join-token` from `harn token create`"}
	}
	what := map[string]string{"mesh-ca": "a certificate of the mesh CA", "lone-ca": "the CA this lone node made for itself"}[t.Mode]
	if what == "" {
		what = text.Sanitize(t.Mode)
	}
	if t.NotAfter == nil {
		return check{"tls", checkFinding, what + ", but the node holds no certificate", "join the mesh with `--join-token`"}
	}
	exp := t.NotAfter.AsTime()
	detail := fmt.Sprintf("%s for %s, valid until %s", what, text.Sanitize(t.Subject), exp.UTC().Format(time.RFC3339))
	switch left := exp.Sub(now); {
	case left <= 0:
		return check{"tls", checkFinding, detail + ": expired", "restart the node to renew it, or rejoin with a fresh `--join-token`"}
	case left < certWarn:
		return check{"tls", checkFinding, fmt.Sprintf("%s: expires in %s and has not renewed", detail, left.Round(time.Hour)),
			"check that a server of the mesh is reachable (`harn mesh raft`); certificates renew through it"}
	}
	return check{"tls", checkOK, detail, ""}
}

func checkRaft(r *api.DoctorRaft) []check {
	var out []check
	switch {
	case r.Leader == "":
		out = append(out, check{"raft", checkFinding, fmt.Sprintf("no leader: %d of %d voters alive", r.Alive, r.Voters),
			fmt.Sprintf("start the servers that are down: a majority (%d of %d) must be up", r.Voters/2+1, r.Voters)})
	case !r.Quorum:
		out = append(out, check{"raft", checkFinding, fmt.Sprintf("leader %s, but only %d of %d voters alive", text.Sanitize(r.Leader), r.Alive, r.Voters),
			"start the servers that are down before another one stops"})
	default:
		out = append(out, check{"raft", checkOK, fmt.Sprintf("leader %s; %d of %d voters alive (quorum %d)", text.Sanitize(r.Leader), r.Alive, r.Voters, r.Voters/2+1), ""})
	}
	if r.Voters > 0 && r.Voters%2 == 0 {
		out = append(out, check{"raft servers", checkFinding,
			fmt.Sprintf("%d servers: they tolerate no more failures than %d would", r.Voters, r.Voters-1),
			"run an odd number of servers: add one with `harn token create --server`, or remove one with `harn mesh remove NODE`"})
	}
	for _, s := range r.StalePeers {
		out = append(out, check{"raft peer", checkFinding, "stale address " + text.Sanitize(s),
			"restart that server so that it updates its address, or remove it with `harn mesh remove NODE` and rejoin it"})
	}
	return append(out, checkRegistryView(r)...)
}

// ServersHold is how many nodes a set of three to five servers holds
// comfortably (docs/perf-mesh.md): past it, watch the servers' CPU and
// the registry's apply lag.
const ServersHold = 2000

// checkRegistryView says where this node reads the registry from and how
// fresh it is, and how many nodes the servers carry.
func checkRegistryView(r *api.DoctorRaft) []check {
	var out []check
	switch {
	case r.Watch == "" && r.State == "Watch":
		out = append(out, check{"registry", checkFinding, "no server answers this node's registry watch; its reads show its last view",
			"check that a server of the mesh is reachable (`harn mesh raft`)"})
	case r.Watch != "" && r.Stale:
		out = append(out, check{"registry", checkFinding,
			fmt.Sprintf("follows server %s, but its view is stale (leader last heard %s ago); reads show the last view", text.Sanitize(r.Watch), orDash(text.Sanitize(r.LastContact))),
			"check the servers (`harn mesh raft`): a majority must be up and reachable"})
	case r.Watch != "":
		out = append(out, check{"registry", checkOK, fmt.Sprintf("follows server %s's watch (holds no raft log); view fresh", text.Sanitize(r.Watch)), ""})
	}
	if r.Voters > 0 && int(r.Members) > ServersHold {
		out = append(out, check{"registry load", checkFinding,
			fmt.Sprintf("%d nodes on %d servers: past about %d nodes, watch the servers' CPU and the registry's apply lag", r.Members, r.Voters, ServersHold),
			"watch `harn mesh raft` (commit against applied index) on each server; add read replicas (--replica) near far nodes"})
	}
	return out
}
