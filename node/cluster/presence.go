package cluster

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	grpcpeer "google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/gossip"
	"github.com/harn-dev/harn/node/meshtrust"
	"github.com/harn-dev/harn/node/trust"
)

// presenceSync repairs what presence gossip missed: it gossips this
// node's digest, and pulls a peer's full presence over the cluster gRPC
// when the peer's digest differs from what this node holds, or when the
// peer's gossip came signed with a certificate not known yet.
type presenceSync struct {
	c *Cluster

	mu        sync.Mutex
	pulling   map[string]bool
	unknownAt map[string]time.Time // last pull for an unknown signer, per origin
	pulls     atomic.Int64         // anti-entropy pulls made (tests, benchmarks)
	dropped   atomic.Int64         // presence blobs refused for their size (tests)
	digests   atomic.Int64         // digests gossiped (tests)
}

func newPresenceSync(c *Cluster) *presenceSync {
	return &presenceSync{c: c, pulling: map[string]bool{}, unknownAt: map[string]time.Time{}}
}

// DigestRepeats is how many times a node gossips its presence digest after
// its presence last changed, one PresenceRefresh apart: a peer that missed
// a delta of the change notices within them. An idle node's presence does
// not change, so it gossips no digest at all: the per-node cost of the
// repair grows with the mesh's changes, not with its size (push/pull
// still compares everything, every push/pull interval).
const DigestRepeats = 3

// digestLoop gossips this node's presence digest at the PresenceRefresh
// ticks after its presence changed (DigestRepeats of them). A peer whose
// copy differs (it missed a delta) pulls the full blob at once rather than
// waiting for the next push/pull: presence does not inherit gossip's rare
// long tail.
func (p *presenceSync) digestLoop() {
	c := p.c
	t := c.clock.NewTicker(c.cfg.PresenceRefresh)
	defer t.Stop()
	var cad digestCadence
	for {
		select {
		case <-c.stop:
			return
		case <-t.C():
		}
		if d := c.local.LocalDigest(); cad.tick(d) {
			c.pub.BroadcastDigest(d)
			p.digests.Add(1)
		}
		p.dropRevoked()
	}
}

// digestCadence decides, at each PresenceRefresh tick, whether to gossip
// the digest: at the DigestRepeats ticks after it changed, and never
// while it stays the same.
type digestCadence struct {
	last string
	left int
	seen bool
}

func (d *digestCadence) tick(digest string) bool {
	if !d.seen || digest != d.last {
		d.last, d.left, d.seen = digest, DigestRepeats, true
	}
	if d.left == 0 {
		return false
	}
	d.left--
	return true
}

// checkDigest compares a peer's gossiped digest with what this node holds
// for it, and pulls the peer's full presence when they differ.
func (p *presenceSync) checkDigest(from string, digest []byte) {
	if p.c.remote.Digest(from) == string(digest) {
		return
	}
	p.startPull(from)
}

// pullUnknown pulls the presence of a peer whose gossip came signed with a
// certificate this node does not know yet (a renewal): the pull's mutual
// TLS handshake shows the peer's current certificate. At most once per
// unknownPullEvery per origin, and only for a known member.
func (p *presenceSync) pullUnknown(origin string) {
	if _, ok := p.c.member(origin); !ok {
		return
	}
	now := p.c.clock.Now()
	p.mu.Lock()
	if now.Sub(p.unknownAt[origin]) < meshtrust.UnknownPullEvery {
		p.mu.Unlock()
		return
	}
	if len(p.unknownAt) >= meshtrust.MaxSignerNames {
		clear(p.unknownAt)
	}
	p.unknownAt[origin] = now
	p.mu.Unlock()
	p.startPull(origin)
}

// startPull pulls a peer's presence in the background, one pull per peer
// at a time.
func (p *presenceSync) startPull(from string) {
	p.mu.Lock()
	if p.pulling[from] {
		p.mu.Unlock()
		return
	}
	p.pulling[from] = true
	p.mu.Unlock()
	p.c.start(func() {
		defer func() {
			p.mu.Lock()
			delete(p.pulling, from)
			p.mu.Unlock()
		}()
		p.pull(from)
	})
}

// pull fetches a peer's full presence over the cluster gRPC (mutual TLS
// that expects the peer's certificate, with trust on) and merges it as
// that peer's. The answer is bounded by MaxPresenceBytes and its entries
// by gossip.MaxBlobEntries.
func (p *presenceSync) pull(from string) {
	c := p.c
	if c.isRemoved(from) {
		return // its certificate is revoked: the dial would be refused
	}
	cl, err := c.ClientOf(from)
	if err != nil {
		return
	}
	sctx, stop := c.stopContext(context.Background())
	defer stop()
	ctx, cancel := context.WithTimeout(sctx, c.cfg.PullTimeout)
	defer cancel()
	var pr grpcpeer.Peer
	res, err := cl.Presence(ctx, &api.PresenceRequest{}, grpc.MaxCallRecvMsgSize(c.cfg.MaxPresenceBytes), grpc.Peer(&pr))
	if err != nil {
		if status.Code(err) == codes.ResourceExhausted {
			p.dropped.Add(1)
			c.log.Warn("presence pull over the size bound refused", "from", from, "limit", c.cfg.MaxPresenceBytes)
			return
		}
		c.log.Debug("presence pull", "from", from, "err", err)
		return
	}
	if c.trust != nil {
		// The connection may predate a revocation of the peer's
		// certificate (the handshake checked it, calls do not): check
		// the certificate that answered now.
		ti, ok := pr.AuthInfo.(credentials.TLSInfo)
		if !ok || len(ti.State.PeerCertificates) == 0 {
			return
		}
		id, err := trust.CertIdentity(ti.State.PeerCertificates[0])
		if err != nil || id.Name != from || c.trust.Revocations().IsRevoked(id.Serial) {
			c.log.Debug("presence pull from a revoked or other certificate dropped", "from", from, "identity", id.String())
			return
		}
		if c.signer != nil {
			c.signer.LearnPeer(ti.State.PeerCertificates[0])
		}
	}
	var b gossip.Blob
	if err := json.Unmarshal(res.Blob, &b); err != nil {
		return
	}
	if err := gossip.CheckBlob(&b); err != nil {
		p.dropped.Add(1)
		c.log.Warn("presence pull refused", "from", from, "err", err)
		return
	}
	b.Node = from
	c.remote.Merge(b)
	p.pulls.Add(1)
}

// dropRevoked forgets the gossiped presence of nodes whose every known
// certificate is now revoked (a removed node): its deltas are refused from
// the revocation on, and what it said before goes too.
func (p *presenceSync) dropRevoked() {
	c := p.c
	if c.signer == nil {
		return
	}
	for _, name := range c.signer.Prune() {
		c.log.Info("presence of a node with a revoked certificate dropped", "member", name)
		c.remote.DropNode(name)
	}
}
