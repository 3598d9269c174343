package cluster

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/apigrpc"
	"github.com/harn-dev/harn/node/meshtrust"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/raftstore"
	"github.com/harn-dev/harn/util/clock"
)

// The registry's watch: a node that holds no raft log (every node but the
// servers and read replicas) follows the registry from a server over the
// cluster gRPC. The server sends a snapshot when the follower's index is
// not in its feed, then every entry it applies, and a progress report
// (leader, indexes, the raft configuration) every WatchProgress (5 s) and at a
// leader change. The follower replays them into its Mirror, so its reads
// are a server's replica as of the last entry, and resumes from its index
// at the next server when the stream breaks.

// Watch bounds.
const (
	watchBatch      = 512     // entries in one event
	watchChunk      = 1 << 20 // bytes of snapshot in one event
	watchBackoffMin = 100 * time.Millisecond
	watchBackoffMax = 5 * time.Second
)

// privateKV are the registry's keys a watcher that is not a server does
// not get: the join tokens (a server redeems them) and the sealed CA
// (only servers can open it).
var privateKV = []string{meshtrust.KVTokenPrefix, meshtrust.KVCA}

// Watch serves the registry's watch to a verified mesh member.
func (s *service) Watch(req *api.WatchRequest, stream apigrpc.Cluster_WatchServer) error {
	c := s.c
	if c.store == nil {
		return errNoLog(c.name)
	}
	server := true
	if c.trust != nil {
		caller, err := trust.PeerFromContext(stream.Context())
		if err != nil {
			return meshtrust.Refuse(c.log, "Watch", caller, err)
		}
		server = caller.Role == trust.RoleServer
	}
	ctx := stream.Context()
	w := c.store.Watch(req.FromIndex)
	t := c.clock.NewTicker(c.cfg.WatchProgress)
	defer t.Stop()
	if err := stream.Send(&api.WatchEvent{Progress: c.progressCache.get(c)}); err != nil {
		return err
	}
	for {
		if w.NeedSnapshot() {
			if err := s.sendSnapshot(w, stream, server); err != nil {
				return err
			}
		}
		es, err := w.Next(ctx, watchBatch, t.C())
		switch {
		case errors.Is(err, raftstore.ErrFeedGap):
			continue // the follower fell behind: a snapshot next
		case errors.Is(err, raftstore.ErrClosed):
			return status.Error(codes.Unavailable, "node: the registry closed")
		case err != nil:
			return err
		}
		ev := &api.WatchEvent{}
		if len(es) == 0 {
			ev.Progress = c.progressCache.get(c) // a tick, or a new leader
		} else {
			ev.Progress = lightProgress(c)
		}
		for _, e := range es {
			we := &api.WatchEntry{Index: e.Index, AppendedAtUnixNano: api.UnixNano(e.AppendedAt)}
			if !e.Private || server {
				we.Command = e.Data
			}
			ev.Entries = append(ev.Entries, we)
		}
		if err := stream.Send(ev); err != nil {
			return err
		}
	}
}

// sendSnapshot sends the registry in chunks.
func (s *service) sendSnapshot(w *raftstore.Watch, stream apigrpc.Cluster_WatchServer, server bool) error {
	b, idx, err := w.Snapshot(server)
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	for off := 0; ; off += watchChunk {
		end := min(off+watchChunk, len(b))
		ev := &api.WatchEvent{Snapshot: b[off:end], SnapshotIndex: idx, SnapshotLast: end == len(b)}
		if ev.SnapshotLast {
			ev.Progress = lightProgress(s.c)
		}
		if err := stream.Send(ev); err != nil {
			return err
		}
		if end == len(b) {
			return nil
		}
	}
}

// progressCache shares one full report among the watches a server serves:
// reading raft's state and configuration costs more than sending it, and
// every watch reports every WatchProgress.
type progressCache struct {
	mu     sync.Mutex
	at     time.Time
	leader string
	p      *api.WatchProgress
}

// progress is this server's full report (its raft state and
// configuration), read again when older than half a WatchProgress or when
// the leader changed. The message is shared: it is only read.
func (pc *progressCache) get(c *Cluster) *api.WatchProgress {
	leader, _ := c.store.Leader()
	now := c.clock.Now()
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.p != nil && pc.leader == leader && now.Sub(pc.at) < c.cfg.WatchProgress/2 {
		return pc.p
	}
	pc.p, pc.at, pc.leader = readProgress(c), now, leader
	return pc.p
}

// readProgress reads the server's raft state and configuration.
func readProgress(c *Cluster) *api.WatchProgress {
	st := c.store.Stats()
	p := &api.WatchProgress{Server: c.name, AppliedIndex: st.AppliedIndex, Leader: st.LeaderID, Term: st.Term,
		CommitIndex: st.CommitIndex, Stale: st.Read.Stale, LeaderContactMs: -1}
	if st.Read.LastContact >= 0 {
		p.LeaderContactMs = st.Read.LastContact.Milliseconds()
	}
	for _, sv := range st.Servers {
		p.Servers = append(p.Servers, &api.WatchServer{Id: sv.ID, Addr: sv.Addr, Voter: sv.Voter})
	}
	return p
}

// lightProgress is the report sent with entries: what costs no raft call.
func lightProgress(c *Cluster) *api.WatchProgress {
	r := c.store.Staleness()
	p := &api.WatchProgress{Server: c.name, AppliedIndex: r.AppliedIndex, Leader: r.LeaderID, Stale: r.Stale, LeaderContactMs: -1}
	if r.LastContact >= 0 {
		p.LeaderContactMs = r.LastContact.Milliseconds()
	}
	return p
}

// watcher follows the registry from a server into the mirror.
type watcher struct {
	c      *Cluster
	mirror *raftstore.Mirror
	// told: servers whose watch is not implemented (an older harn),
	// logged once each.
	told map[string]bool
}

// run follows until the cluster stops: one stream at a time, to a server
// picked at random among the alive ones (the last one first), backing off
// while none answers.
func (w *watcher) run() {
	c := w.c
	backoff := watchBackoffMin
	last := ""
	for {
		server := w.pick(last)
		if server != "" {
			ok, err := w.follow(server)
			if ok {
				backoff = watchBackoffMin
			}
			if err != nil {
				c.log.Debug("registry watch ended", "server", server, "err", err)
			}
			last = server
		}
		jitter := time.Duration(rand.Int64N(int64(backoff)/2 + 1))
		if !clock.Sleep(c.clock, backoff/2+jitter, c.stop) {
			return
		}
		backoff = min(2*backoff, watchBackoffMax)
	}
}

// pick is an alive server to watch: prefer, the one followed last, when
// it is still alive; else one at random.
func (w *watcher) pick(prefer string) string {
	var alive []string
	for _, m := range w.c.mesh.Members() {
		if m.Name == w.c.name || m.Status != mesh.StatusAlive || m.Meta.RPCAddr == "" {
			continue
		}
		if m.Meta.Role != mesh.RoleServer && m.Meta.Role != mesh.RoleReplica {
			continue
		}
		if w.told[m.Name] {
			continue
		}
		if m.Name == prefer {
			return prefer
		}
		alive = append(alive, m.Name)
	}
	if len(alive) == 0 {
		clear(w.told) // all older, or none: ask again later
		return ""
	}
	return alive[rand.IntN(len(alive))]
}

// follow streams from one server until the stream ends; ok says it got
// at least one event.
func (w *watcher) follow(server string) (ok bool, err error) {
	c := w.c
	cl, err := c.ClientOf(server)
	if err != nil {
		return false, err
	}
	ctx, cancel := c.stopContext(context.Background())
	defer cancel()
	from := w.mirror.Applied()
	stream, err := cl.Watch(ctx, &api.WatchRequest{FromIndex: from})
	if err != nil {
		return false, err
	}
	var snap []byte
	first := true
	for {
		ev, err := stream.Recv()
		if err != nil {
			if status.Code(err) == codes.Unimplemented {
				w.told[server] = true
				c.log.Warn("server runs a harn without the registry watch; this node reads the registry from the others (upgrade the servers first)", "server", server)
			}
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return ok, err
		}
		ok = true
		if p := ev.GetProgress(); p != nil {
			if first && p.GetAppliedIndex() < from && !p.GetStale() && ev.GetSnapshotIndex() == 0 && len(ev.GetEntries()) == 0 {
				// An up-to-date server behind this node's view: the view
				// came from another registry (a mesh made anew). Start
				// again from a snapshot.
				c.log.Warn("registry view is ahead of an up-to-date server; taking a snapshot", "server", server, "view", from, "server_index", p.GetAppliedIndex())
				w.mirror.Reset()
				return ok, nil
			}
			first = false
			w.mirror.Report(progressOf(p))
		}
		if len(ev.GetSnapshot()) > 0 || ev.GetSnapshotLast() {
			if len(snap)+len(ev.GetSnapshot()) > raftstore.MaxSnapshotBytes {
				return ok, errors.New("node: the registry snapshot is over its bound")
			}
			snap = append(snap, ev.GetSnapshot()...)
			if ev.GetSnapshotLast() {
				if err := w.mirror.Restore(snap); err != nil {
					return ok, err
				}
				snap = nil
			}
		}
		for _, e := range ev.GetEntries() {
			w.mirror.Apply(raftstore.FeedEntry{Index: e.GetIndex(), AppendedAt: api.TimeOf(e.GetAppendedAtUnixNano()), Data: nilIfEmpty(e.GetCommand())})
		}
		if err := w.mirror.SaveIfDue(); err != nil {
			c.log.Warn("save the registry view", "err", err)
		}
	}
}

func nilIfEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// progressOf is a server's report as the mirror keeps it.
func progressOf(p *api.WatchProgress) raftstore.Progress {
	out := raftstore.Progress{Server: p.GetServer(), Leader: p.GetLeader(), Term: p.GetTerm(), CommitIndex: p.GetCommitIndex(),
		Applied: p.GetAppliedIndex(), Stale: p.GetStale(), LeaderContact: -1}
	if ms := p.GetLeaderContactMs(); ms >= 0 {
		out.LeaderContact = time.Duration(ms) * time.Millisecond
	}
	for _, s := range p.GetServers() {
		out.Servers = append(out.Servers, raftstore.Server{ID: s.GetId(), Addr: s.GetAddr(), Voter: s.GetVoter()})
	}
	return out
}
