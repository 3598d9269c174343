package claims

import (
	"context"

	"github.com/harn-dev/harn/node/claims/claimwire"
	"github.com/harn-dev/harn/raftstore"
)

// Lister lists one session's claims (the registry's replica and Local
// have it).
type Lister interface {
	ClaimsOf(session string) []raftstore.Claim
}

// ClaimsOf lists a session's claims, or none when the table cannot list.
func (d *Decider) ClaimsOf(session string) []raftstore.Claim {
	if l, ok := d.cfg.Table.(Lister); ok {
		return l.ClaimsOf(session)
	}
	return nil
}

// Release drops a session's claims: all of them, or the paths named of
// repo. It returns once the local replica reflects the release.
func (d *Decider) Release(ctx context.Context, session, repo string, all bool, paths ...string) error {
	if all {
		d.dropPending(session, "", nil)
	} else if len(paths) > 0 {
		d.dropPending(session, repo, paths)
	}
	return d.cfg.Writer.Write(ctx, raftstore.ReleaseCmd(session, repo, all, paths...))
}

// Held returns the claims other live sessions hold on r's paths, each
// described, without claiming anything (the commit guard's read). A holder
// known to have ended holds nothing.
func (d *Decider) Held(r Request) []Holder {
	if d.cfg.Mode == ModeOff || r.Repo == "" {
		return nil
	}
	held, _ := d.scan(r)
	var out []Holder
	for _, c := range held {
		h := d.cfg.Describe.Describe(c.SessionID, c.Node)
		if h.Ended {
			continue
		}
		h.Path, h.Session = c.Path, c.SessionID
		if h.Node == "" {
			h.Node = c.Node
		}
		out = append(out, h)
	}
	return out
}

// ClaimsOf lists a session's claims in the local table.
func (l *Local) ClaimsOf(session string) []raftstore.Claim { return l.reg.ClaimsOf(session) }

// MaxPaths bounds the paths of one claim, release or check.
const MaxPaths = claimwire.MaxPaths

// The client bounds its requests with claimwire.MaxPaths: it must be the
// registry's bound (this fails to compile when the two differ).
var _ = [1]struct{}{}[claimwire.MaxPaths-raftstore.MaxClaimPaths]

// RepoIdentity is claimwire.RepoIdentity.
func RepoIdentity(origin, top string) string { return claimwire.RepoIdentity(origin, top) }

// NormalizeURL is claimwire.NormalizeURL.
func NormalizeURL(u string) string { return claimwire.NormalizeURL(u) }
