package meshtrust

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/raftstore"
)

// The registry's write authority: the leader checks every forwarded write
// against one rule per op, with the caller's verified certificate. An op
// with no rule is refused (default deny), so that an op added to
// raftstore later cannot pass unchecked: TestEveryRegistryOpHasAWriteRule
// fails until it has one.

// Write-authority errors (each wrapped in a *trust.RefusalError that names
// the caller's certificate).
var (
	// ErrWriteOpUnknown: the op has no write-authority rule.
	ErrWriteOpUnknown = errors.New("node: registry op has no write-authority rule")
	// ErrNotNotifyAdmin: a node that is neither a server nor named by the
	// servers' --notify-admins tried to change the mesh's webhooks.
	ErrNotNotifyAdmin = errors.New("node: caller may not change the mesh's webhooks")
	// ErrClaimNode: a claim that names another node than the caller's.
	ErrClaimNode = errors.New("node: a claim names the caller's own node")
)

// writeAuthority is what the rules read: the local replica (the leader's,
// where they run) and the checking server's policy.
type writeAuthority struct {
	// owner is the node a session's record names ("" and false when the
	// registry has no record).
	owner func(session string) (string, bool)
	// override reads a capability or provider switch (switches.go).
	override func(key string) (Switch, bool)
	// claimsOf lists a session's claims.
	claimsOf func(session string) []raftstore.Claim
	// notifyAdmins are the nodes, beside servers, that may change the
	// mesh's webhooks (--notify-admins).
	notifyAdmins []string
}

// writeRule is the rule of one op: nil allows the write.
type writeRule struct {
	// who says, for people, who may make the write.
	who   string
	check func(a *writeAuthority, caller trust.Identity, cmd raftstore.Command) error
}

// writeRules maps every raftstore op to its rule.
var writeRules = map[raftstore.Op]writeRule{
	raftstore.OpUpsert:       {"the session's owner node; a server may end any session", (*writeAuthority).upserts},
	raftstore.OpBatch:        {"the owner node of every session in it; a server may end any session", (*writeAuthority).upserts},
	raftstore.OpDelete:       {"servers only (housekeeping)", (*writeAuthority).housekeeping},
	raftstore.OpKV:           {"servers only (trust records, mesh settings); a member may write its own capability and provider switches", (*writeAuthority).kv},
	raftstore.OpClaim:        {"the session's owner node, in its own name", (*writeAuthority).claim},
	raftstore.OpRelease:      {"the session's owner node; servers (housekeeping)", (*writeAuthority).release},
	raftstore.OpNotifySet:    {"servers, and the nodes the servers' --notify-admins names", (*writeAuthority).notify},
	raftstore.OpNotifyRemove: {"servers, and the nodes the servers' --notify-admins names", (*writeAuthority).notify},
}

// check decides whether caller may make the write cmd.
func (a *writeAuthority) check(caller trust.Identity, cmd raftstore.Command) error {
	rule, ok := writeRules[cmd.Op]
	if !ok {
		return &trust.RefusalError{Caller: caller, Err: ErrWriteOpUnknown,
			Detail: fmt.Sprintf("op %q has no rule on this server, so it is refused", clipText(string(cmd.Op)))}
	}
	return rule.check(a, caller, cmd)
}

// kv: the trust records and mesh settings are housekeeping; a batch of
// capability and provider switches only (overrides.go) follows their own
// rule.
func (a *writeAuthority) kv(caller trust.Identity, cmd raftstore.Command) error {
	if ok, err := authorizeSwitch(caller, cmd, a.override); ok {
		return err
	}
	return a.housekeeping(caller, cmd)
}

func (a *writeAuthority) housekeeping(caller trust.Identity, _ raftstore.Command) error {
	return trust.CheckSessionWrite(caller, "", trust.WriteHousekeeping)
}

// upserts: session writes only for sessions the caller's node owns (the
// record's node, or the node the upsert's identity names for a new one);
// an upsert that only ends a session also from a server (the reaper of an
// unreachable node's sessions).
func (a *writeAuthority) upserts(caller trust.Identity, cmd raftstore.Command) error {
	owners := map[string]string{} // owners set earlier in the same batch
	for i := range cmd.Upserts {
		u := &cmd.Upserts[i]
		owner, ok := owners[u.SessionID]
		if !ok {
			owner, _ = a.owner(u.SessionID)
		}
		if u.Identity != nil {
			if owner != "" && u.Identity.Node != owner {
				// Moving a session to another node: the first owner
				// holds the id, nobody may.
				return trust.CheckSessionWrite(caller, owner, trust.WriteOwned)
			}
			owner = u.Identity.Node
		}
		owners[u.SessionID] = owner
		err := trust.CheckSessionWrite(caller, owner, trust.WriteOwned)
		if err != nil && endOnly(u) {
			err = trust.CheckSessionWrite(caller, owner, trust.WriteHousekeeping)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// endOnly: an upsert that only ends a session (a server's reaper of an
// unreachable node's sessions).
func endOnly(u *raftstore.Upsert) bool {
	return u.End != nil && u.Identity == nil && u.Task == nil && u.Lifecycle == nil && u.Activity == nil
}

// claim: only in the name of a session the caller's node owns, and naming
// the caller's node as the claim's. A claim may reach the leader before
// its session's record; the session is then the claimant node's.
func (a *writeAuthority) claim(caller trust.Identity, cmd raftstore.Command) error {
	p := cmd.Claim
	if p.Node != caller.Name {
		return &trust.RefusalError{Caller: caller, Err: ErrClaimNode,
			Detail: fmt.Sprintf("the claim names node %q", clipText(p.Node))}
	}
	owner, _ := a.owner(p.SessionID)
	if owner == "" {
		owner = p.Node
	}
	return trust.CheckSessionWrite(caller, owner, trust.WriteOwned)
}

// release: a session's claims only by its owner node (the record's, else
// the node its claims name), or by a server (housekeeping: an ended
// session, a removed node).
func (a *writeAuthority) release(caller trust.Identity, cmd raftstore.Command) error {
	p := cmd.Claim
	owner, _ := a.owner(p.SessionID)
	if owner == "" {
		for _, c := range a.claimsOf(p.SessionID) {
			if c.Node != "" {
				owner = c.Node
				break
			}
		}
	}
	if err := trust.CheckSessionWrite(caller, owner, trust.WriteOwned); err == nil {
		return nil
	}
	if trust.MayWriteSession(caller, owner, trust.WriteHousekeeping) {
		return nil
	}
	detail := fmt.Sprintf("the session belongs to node %q: release its claims there, or on a server", clipText(owner))
	if owner == "" {
		detail = "the registry knows no owner of the session: release its claims on a server"
	}
	return &trust.RefusalError{Caller: caller, Err: trust.ErrNotOwner, Detail: detail}
}

// notify: the mesh's webhooks only from a server or a node the checking
// server's --notify-admins names.
func (a *writeAuthority) notify(caller trust.Identity, _ raftstore.Command) error {
	if caller.Name != "" && (caller.Role == trust.RoleServer || slices.Contains(a.notifyAdmins, caller.Name)) {
		return nil
	}
	return &trust.RefusalError{Caller: caller, Err: ErrNotNotifyAdmin,
		Detail: "webhooks are added and removed on a server, or on a node named by the servers' --notify-admins"}
}

// Reader is what the write rules read: the checking server's replica.
type Reader interface {
	Get(id string) (raftstore.Record, bool)
	ClaimsOf(session string) []raftstore.Claim
	KVList(prefix string) []raftstore.KVEntry
}

// AuthorizeWrite decides whether caller may make a forwarded registry
// write (writeRules), reading the checking server's replica r;
// notifyAdmins is its --notify-admins.
func AuthorizeWrite(r Reader, notifyAdmins []string, caller trust.Identity, cmd raftstore.Command) error {
	a := &writeAuthority{
		owner: func(id string) (string, bool) {
			rec, ok := r.Get(id)
			return rec.Node, ok
		},
		claimsOf:     r.ClaimsOf,
		notifyAdmins: notifyAdmins,
		override: func(key string) (Switch, bool) {
			v, ok := Switches(r.KVList(SwitchPrefix))[key]
			return v, ok
		},
	}
	return a.check(caller, cmd)
}

// clipText keeps untrusted text in a refusal short and printable.
func clipText(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= 64 {
			b.WriteString("…")
			break
		}
		if r < 0x20 || r == 0x7f {
			r = '?'
		}
		b.WriteRune(r)
	}
	return b.String()
}
