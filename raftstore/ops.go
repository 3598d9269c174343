package raftstore

// Ops lists every command op this package defines, in a fixed order. The
// node's write authority keeps one rule per op and refuses an op it has no
// rule for; its tests compare their table with this list, and this
// package's tests compare this list with the Op constants in its source.
func Ops() []Op {
	return []Op{OpUpsert, OpBatch, OpDelete, OpClaim, OpRelease, OpNotifySet, OpNotifyRemove, OpKV}
}
