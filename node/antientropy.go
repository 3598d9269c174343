package node

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"time"

	"github.com/harn-dev/harn/node/api"
)

// digestKey is the gossip key of a node's presence digest. Session ids
// never start with NUL, so it cannot collide with one.
const digestKey = "\x00digest"

// presenceDigest hashes (session id, presence hash) of live sessions in id
// order: two nodes holding the same live presence for a node compute the
// same digest.
func presenceDigest(pairs [][2]string) string {
	sort.Slice(pairs, func(i, j int) bool { return pairs[i][0] < pairs[j][0] })
	h := sha256.New()
	for _, p := range pairs {
		h.Write([]byte(p[0]))
		h.Write([]byte{0})
		h.Write([]byte(p[1]))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

func (n *Node) localDigest() string {
	n.mu.Lock()
	pairs := make([][2]string, 0, len(n.sessions))
	for id, e := range n.sessions {
		if e.state.Events > 0 && !e.state.Ended {
			pairs = append(pairs, [2]string{id, e.hash})
		}
	}
	n.mu.Unlock()
	return presenceDigest(pairs)
}

func (r *remotePresence) digest(node string) string {
	r.mu.Lock()
	pairs := make([][2]string, 0, len(r.nodes[node]))
	for id, e := range r.nodes[node] {
		if !e.entry.Ended {
			pairs = append(pairs, [2]string{id, e.entry.Hash})
		}
	}
	r.mu.Unlock()
	return presenceDigest(pairs)
}

// digestLoop gossips this node's presence digest every PresenceRefresh. A
// peer whose copy differs (it missed a delta) pulls the full blob at once
// rather than waiting for the next push/pull: presence does not inherit
// gossip's rare long tail.
func (c *cluster) digestLoop() {
	defer c.n.wg.Done()
	t := time.NewTicker(c.cfg.PresenceRefresh)
	defer t.Stop()
	for {
		select {
		case <-c.n.stop:
			return
		case <-t.C:
		}
		d := c.n.localDigest()
		if err := c.mesh.Broadcast(digestKey, c.nextVersion(), []byte(d)); err != nil {
			c.n.log.Debug("digest broadcast", "err", err)
		}
	}
}

// checkDigest compares a peer's gossiped digest with what this node holds
// for it, and pulls the peer's full presence when they differ.
func (c *cluster) checkDigest(from string, digest []byte) {
	if c.n.remote.digest(from) == string(digest) {
		return
	}
	c.pullMu.Lock()
	if c.pulling[from] {
		c.pullMu.Unlock()
		return
	}
	c.pulling[from] = true
	c.pullMu.Unlock()
	c.n.wg.Add(1)
	go func() {
		defer c.n.wg.Done()
		defer func() {
			c.pullMu.Lock()
			delete(c.pulling, from)
			c.pullMu.Unlock()
		}()
		c.pull(from)
	}()
}

func (c *cluster) pull(from string) {
	cl, err := c.clusterClientOf(from)
	if err != nil {
		return
	}
	sctx, stop := c.n.stopContext(context.Background())
	defer stop()
	ctx, cancel := context.WithTimeout(sctx, 3*time.Second)
	defer cancel()
	res, err := cl.Presence(ctx, &api.PresenceRequest{})
	if err != nil {
		c.n.log.Debug("presence pull", "from", from, "err", err)
		return
	}
	var b blob
	if err := json.Unmarshal(res.Blob, &b); err != nil {
		return
	}
	b.Node = from
	c.n.remote.merge(b)
	c.pulls.Add(1)
}
