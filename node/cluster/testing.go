package cluster

// ReconcileNow runs one pass of the leader's reconcile of the raft
// configuration now, in the caller's goroutine, as its ticker or a member
// event would; on a node that is not the leader it does nothing. Tests use
// it to show what a pass does (or does not) change without waiting for
// the 5 s ticker.
func (c *Cluster) ReconcileNow() {
	if c.store == nil || c.members == nil || !c.store.IsLeader() {
		return
	}
	c.members.reconcile()
}
