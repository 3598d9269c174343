package gossip

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/clock"
)

// Broadcaster sends a versioned delta to the mesh (mesh.Mesh does).
type Broadcaster interface {
	Broadcast(key string, version uint64, data []byte) error
}

// Publisher tells the mesh about this node's sessions: one delta per
// change of a session's presence hash, each with a version that keeps
// increasing across restarts (it comes from the clock).
type Publisher struct {
	clock clock.Clock
	log   *slog.Logger
	out   Broadcaster

	verMu   sync.Mutex
	lastVer uint64

	sentMu  sync.Mutex
	sent    map[string]sentDelta // session -> what its last delta said
	sentVer map[string]uint64    // session -> last broadcast version

	decorate atomic.Pointer[decorator]
}

// sentDelta is what decides whether a session needs a new delta.
type sentDelta struct {
	hash, nameSeen string
	evidence       time.Time
}

// EvidenceRefresh is how stale a gossiped entry's evidence time may grow
// while nothing else about the session changes: a busy session sends one
// delta per EvidenceRefresh at most for it, and readers wait this much
// longer before they call a gossiped session silent.
const EvidenceRefresh = 30 * time.Second

// NewPublisher returns a publisher that broadcasts on out.
func NewPublisher(clk clock.Clock, log *slog.Logger, out Broadcaster) *Publisher {
	return &Publisher{clock: clk, log: log, out: out, sent: map[string]sentDelta{}, sentVer: map[string]uint64{}}
}

// NextVersion returns a strictly increasing gossip version, from the clock
// so that it keeps increasing across restarts.
func (p *Publisher) NextVersion() uint64 {
	p.verMu.Lock()
	defer p.verMu.Unlock()
	v := uint64(p.clock.Now().UnixNano())
	if v <= p.lastVer {
		v = p.lastVer + 1
	}
	p.lastVer = v
	return v
}

// Publish broadcasts s's delta unless its last delta already said as
// much: the same presence hash and seen name, and evidence less than
// EvidenceRefresh older than s's.
func (p *Publisher) Publish(s *presence.State, hash string) {
	e := EntryOf(s, hash)
	p.decorateEntry(&e)
	hash = e.Hash
	p.sentMu.Lock()
	last, ok := p.sent[s.SessionID]
	if ok && last.hash == hash && last.nameSeen == s.SessionNameSeenFor &&
		s.LastEvidenceAt.Sub(last.evidence) < EvidenceRefresh {
		p.sentMu.Unlock()
		return
	}
	p.sent[s.SessionID] = sentDelta{hash: hash, nameSeen: s.SessionNameSeenFor, evidence: s.LastEvidenceAt}
	p.sentMu.Unlock()
	delta, err := EncodeDelta(e)
	if err != nil {
		p.log.Error("presence delta", "session", s.SessionID, "err", err)
		return
	}
	v := p.NextVersion()
	p.sentMu.Lock()
	p.sentVer[s.SessionID] = v
	p.sentMu.Unlock()
	if err := p.out.Broadcast(s.SessionID, v, delta); err != nil && !errors.Is(err, mesh.ErrShutdown) {
		p.log.Warn("presence broadcast", "session", s.SessionID, "err", err)
	}
}

// SentVersion is the version of the last delta broadcast for session.
func (p *Publisher) SentVersion(session string) (uint64, bool) {
	p.sentMu.Lock()
	defer p.sentMu.Unlock()
	v, ok := p.sentVer[session]
	return v, ok
}

// Blob is node's full presence for push/pull, from its live entries: each
// entry carries the version of its last delta (or the blob's own).
func (p *Publisher) Blob(node string, live []Entry) Blob {
	b := Blob{Node: node, At: p.NextVersion(), Entries: live}
	p.sentMu.Lock()
	for _, e := range b.Entries {
		v, ok := p.sentVer[e.GetSessionId()]
		if !ok {
			v = b.At
		}
		b.Versions = append(b.Versions, v)
	}
	p.sentMu.Unlock()
	return b
}

// BroadcastDigest gossips this node's presence digest.
func (p *Publisher) BroadcastDigest(digest string) {
	if err := p.out.Broadcast(DigestKey, p.NextVersion(), []byte(digest)); err != nil {
		p.log.Debug("digest broadcast", "err", err)
	}
}
