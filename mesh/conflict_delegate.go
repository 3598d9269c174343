package mesh

import "github.com/hashicorp/memberlist"

// conflictDelegate adapts memberlist.ConflictDelegate: memberlist refused an
// alive message because another address already holds that name. Mostly it
// is a node whose address changed, announcing itself before its old self
// is declared dead; the Mesh remembers the claimant and contacts it once
// the name can be reclaimed (see Mesh.serveClaims). Called with memberlist's
// node lock held.
type conflictDelegate struct{ m *Mesh }

var _ memberlist.ConflictDelegate = (*conflictDelegate)(nil)

func (c *conflictDelegate) NotifyConflict(existing, other *memberlist.Node) {
	c.m.onConflict(existing, other)
}
