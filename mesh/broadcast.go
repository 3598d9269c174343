package mesh

import (
	"math"
	"sync"

	"github.com/hashicorp/memberlist"
)

// broadcast is one queued gossip message: a delta, or a leave intent.
type broadcast struct {
	kind    byte   // msgDelta (signed or not) or msgLeave
	origin  string // the delta's origin ("" for a leave intent)
	key     string // the delta's key, or the leaving node's name
	version uint64
	msg     []byte
	notify  chan struct{} // optional, capacity 1: signalled when done
}

var _ memberlist.Broadcast = (*broadcast)(nil)

// Invalidates drops a queued message for the same origin and key whose
// version is not newer: only the newest version of a key is worth
// gossiping. Another origin's message for the same key is never dropped. (mesh never
// queues an older version after a newer one; see Mesh.Broadcast.)
func (b *broadcast) Invalidates(other memberlist.Broadcast) bool {
	o, ok := other.(*broadcast)
	return ok && o.kind == b.kind && o.origin == b.origin && o.key == b.key && o.version <= b.version
}

func (b *broadcast) Message() []byte { return b.msg }

// Finished is called when the message reached its transmit limit or was
// invalidated.
func (b *broadcast) Finished() {
	if b.notify != nil {
		signal(b.notify)
	}
}

// broadcastQueue is memberlist's TransmitLimitedQueue with a retransmit
// multiplier chosen per call from the mesh size.
type broadcastQueue struct {
	// mu serializes GetBroadcasts with the write of q.RetransmitMult that
	// precedes it: the queue reads that field only inside GetBroadcasts.
	mu    sync.Mutex
	q     memberlist.TransmitLimitedQueue
	fixed int // Config.RetransmitMult; 0 = scaledRetransmitMult
}

func newBroadcastQueue(fixed int, numNodes func() int) *broadcastQueue {
	bq := &broadcastQueue{fixed: fixed}
	bq.q.NumNodes = numNodes
	bq.q.RetransmitMult = max(fixed, 1)
	return bq
}

func (bq *broadcastQueue) queue(b *broadcast) { bq.q.QueueBroadcast(b) }

func (bq *broadcastQueue) get(overhead, limit int) [][]byte {
	bq.mu.Lock()
	defer bq.mu.Unlock()
	if bq.fixed > 0 {
		bq.q.RetransmitMult = bq.fixed
	} else {
		bq.q.RetransmitMult = scaledRetransmitMult(bq.q.NumNodes())
	}
	return bq.q.GetBroadcasts(overhead, limit)
}

func (bq *broadcastQueue) numQueued() int { return bq.q.NumQueued() }

// prune drops the oldest messages beyond maxRetain. memberlist v0.7.0's
// Prune dereferences the queue's tree before anything was ever queued, so
// it is called only when there is something to drop.
func (bq *broadcastQueue) prune(maxRetain int) {
	if maxRetain > 0 && bq.q.NumQueued() > maxRetain {
		bq.q.Prune(maxRetain)
	}
}

// missTarget is the accepted chance that a delta misses at least one node
// of the mesh through gossip alone.
const missTarget = 1e-3

// scaledRetransmitMult picks the multiplier for a mesh of n alive nodes.
//
// memberlist sends each queued message L = mult·⌈log10(n+1)⌉ times from
// every node that queued it, each time to one random peer (a gossip target
// or a probe it rides on). mesh re-gossips every new version on every node,
// so when a delta has spread, n nodes have sent about n·L copies to n−1
// peers: a given node receives about Poisson(L) of them and is missed with
// probability ≈ e^−L, the mesh with ≈ n·e^−L. Asking n·e^−L ≤ missTarget
// gives L ≥ ln n + ln(1/missTarget): 9 transmissions at 5 nodes, 10 at 20,
// 12 at 100. mult is L divided by memberlist's log10 factor, and never below
// memberlist's own default of 4. Cost: about n·L piggybacked message slots
// per delta, a few hundred bytes per node per delta.
func scaledRetransmitMult(n int) int {
	n = max(n, 1)
	want := math.Ceil(math.Log(float64(n)) + math.Log(1/missTarget))
	scale := math.Ceil(math.Log10(float64(n + 1)))
	return max(4, int(math.Ceil(want/scale)))
}
