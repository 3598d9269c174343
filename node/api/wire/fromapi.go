package wire

// The client's conversions from the node's messages (node/api) to these
// views; the node's conversions the other way are in toapi.go or beside
// its services. One function each way.

import (
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/claims/claimwire"
	"github.com/harn-dev/harn/raftstore/raftwire"
	"time"
)

// CAStatusFromAPI reads the CA's state from the wire.
func CAStatusFromAPI(v *api.CAStatusResponse) CAStatus {
	return CAStatus{Roots: v.GetRoots(), Rotating: v.GetRotating(), OnCurrent: v.GetOnCurrent(), Members: v.GetMembersOnCurrent()}
}

// KeyringFromAPI reads the keyring's view from the wire.
func KeyringFromAPI(v *api.KeyringView) KeyringView {
	return KeyringView{Primary: v.GetPrimary(), Keys: v.GetKeys(), NodePrimary: v.GetNodePrimary(), NodeKeys: v.GetNodeKeys()}
}

// RevokedFromAPI reads what a node's revocation revoked.
func RevokedFromAPI(v *api.Revoked) Revoked {
	return Revoked{Node: v.GetNode(), Serials: v.GetSerials()}
}

// TokenCreatedFromAPI reads a new token from the wire.
func TokenCreatedFromAPI(t *api.TokenCreated) TokenCreated {
	return TokenCreated{Token: t.GetJoinToken(), ID: t.GetId(), Role: t.GetRole(), Expires: t.GetExpires().AsTime(), Uses: int(t.GetUses()),
		JoinAddr: t.GetJoinAddr(), JoinRPC: t.GetJoinRpc()}
}

// TokenRecord is a join token's record as `harn token list --json` shows
// it: the registry's record (node/trust's TokenRecord), never the secret.
type TokenRecord struct {
	ID         string    `json:"id"`
	SecretHash string    `json:"secret_sha256"` // hex
	Role       string    `json:"role"`
	Created    time.Time `json:"created"`
	Expires    time.Time `json:"expires"`
	Uses       int       `json:"uses,omitempty"` // 0: unlimited
	Used       int       `json:"used"`
}

// TokenRecordsFromAPI reads token records from the wire.
func TokenRecordsFromAPI(recs []*api.TokenRecord) []TokenRecord {
	var out []TokenRecord
	for _, r := range recs {
		out = append(out, TokenRecord{ID: r.GetId(), SecretHash: r.GetSecretSha256(), Role: r.GetRole(),
			Created: r.GetCreated().AsTime(), Expires: r.GetExpires().AsTime(), Uses: int(r.GetUses()), Used: int(r.GetUsed())})
	}
	return out
}

// CoordRequestOf is the Coord call of op with body b.
func CoordRequestOf(op string, b CoordBody) *api.CoordRequest {
	return &api.CoordRequest{Op: op, Session: b.Session, Claims: claimwire.ToAPI(b.Claims), All: b.All,
		Reason: b.Reason, By: b.By}
}

// CoordResultFromAPI reads a coordination result from the wire.
func CoordResultFromAPI(r *api.CoordResult) CoordResult {
	return CoordResult{Session: r.GetSession(), Node: r.GetNode(), Claims: claimwire.RegistryClaimsFromAPI(r.GetClaims()),
		Holders: claimwire.HoldersFromAPI(r.GetHolders()), Mode: r.GetMode(), Ended: r.GetEnded(),
		Already: r.GetAlready(), Alive: r.GetAlive(), PID: int(r.GetPid()), Hosted: r.GetHosted()}
}

// DesktopFromAPI reads the desktop notifier's view from the wire.
func DesktopFromAPI(d *api.Desktop) DesktopView {
	return DesktopView{Enabled: d.GetEnabled(), Asked: d.GetAsked(), Shown: d.GetShown(), Failed: d.GetFailed(), Dropped: d.GetDropped()}
}

// DiagnosticFromAPI reads a diagnostic from the wire.
func DiagnosticFromAPI(d *api.Diagnostic) Diagnostic {
	return Diagnostic{Seq: d.GetSeq(), TS: d.GetTs(), Source: d.GetSource(), Error: d.GetError(),
		InputBytes: int(d.GetInputBytes()), InputDigest: d.GetInputDigest()}
}

// MemberFromAPI reads a member from the wire.
func MemberFromAPI(m *api.Member) MemberView {
	return MemberView{Name: m.GetName(), Addr: m.GetAddr(), Status: m.GetStatus(), Role: m.GetRole(),
		Since: m.GetSince(), RPC: m.GetRpcAddr(), Raft: m.GetRaftAddr()}
}

// RaftFromAPI reads the raft state from the wire.
func RaftFromAPI(v *api.RaftStats) RaftView {
	out := RaftView{Leader: v.GetLeader(), Term: v.GetTerm(), CommitIndex: v.GetCommitIndex(),
		Applied: v.GetAppliedIndex(), State: v.GetState(), Stale: v.GetStale(), LastContact: v.GetLastContact()}
	for _, s := range v.GetServers() {
		out.Servers = append(out.Servers, RaftServer{Server: raftwire.Server{ID: s.GetId(), Addr: s.GetAddr(), Voter: s.GetVoter()},
			Advertises: s.GetAdvertises(), Stale: s.GetStale()})
	}
	return out
}

// WebhookFromAPI reads a webhook's view from the wire.
func WebhookFromAPI(w *api.Webhook) WebhookView {
	on := w.GetOn()
	if on == nil {
		on = []string{}
	}
	return WebhookView{ID: w.GetId(), URL: w.GetUrl(), Format: w.GetFormat(), On: on, Queued: int(w.GetQueued()),
		Sent: w.GetSent(), Failed: w.GetFailed(), Dropped: w.GetDropped(), Retries: w.GetRetries(),
		LastError: w.GetLastError(), LastErrorAt: w.GetLastErrorAt()}
}
