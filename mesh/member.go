package mesh

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"time"

	"github.com/hashicorp/memberlist"
)

// Status is a member's state as this node sees it.
type Status string

const (
	StatusAlive   Status = "alive"
	StatusSuspect Status = "suspect" // this node failed to reach it; not yet declared dead
	StatusDead    Status = "dead"    // failure detection declared it dead
	StatusLeft    Status = "left"    // it said it was leaving, then left
)

// Member is one node of the mesh, alive or remembered.
type Member struct {
	Name   string
	Addr   string // IP
	Port   int
	Status Status
	Meta   NodeMeta
	// Since is when the member entered Status, from Config.Clock.
	Since time.Time
}

// Address is "host:port".
func (mb Member) Address() string { return net.JoinHostPort(mb.Addr, strconv.Itoa(mb.Port)) }

// EventKind says what happened to a member.
type EventKind int

const (
	MemberJoin    EventKind = iota + 1 // first seen, or back after leaving on purpose
	MemberLeave                        // left on purpose
	MemberFailed                       // declared dead
	MemberUpdate                       // its metadata (or address) changed
	MemberSuspect                      // this node failed to reach it
	MemberAlive                        // back from suspect or dead
)

func (k EventKind) String() string {
	switch k {
	case MemberJoin:
		return "join"
	case MemberLeave:
		return "leave"
	case MemberFailed:
		return "failed"
	case MemberUpdate:
		return "update"
	case MemberSuspect:
		return "suspect"
	case MemberAlive:
		return "alive"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// MemberEvent is delivered to Handler.MemberEvent, in order, from one
// goroutine.
type MemberEvent struct {
	Kind   EventKind
	Member Member
}

// Handler is implemented by the node. mesh calls it from its own and from
// memberlist's goroutines, concurrently, never while holding a lock, so it
// must be safe for concurrent use and may call back into the Mesh. It should
// not block for long: a slow ApplyDelta delays the messages behind it.
type Handler interface {
	// LocalState returns the node's full blob for push/pull anti-entropy.
	LocalState() []byte
	// MergeRemoteState receives another node's full blob.
	MergeRemoteState(from string, blob []byte)
	// ApplyDelta receives a delta broadcast by node from. The same version
	// may arrive more than once (direct send and gossip both deliver) and
	// versions may arrive out of order: the node keeps the newest.
	ApplyDelta(from string, key string, version uint64, delta []byte)
	// MemberEvent is told of every membership change, this node included.
	MemberEvent(ev MemberEvent)
}

// record is this node's memory of one member.
type record struct {
	Member
	node     memberlist.Node // name, address and port, for direct sends
	instance uint64          // from the meta; tells a restart from the process before it
	deadAt   time.Time       // Config.Clock, when declared dead (for DeadNodeReclaimTime)
}

// intentRec remembers that one instance of a node announced its leave.
type intentRec struct {
	instance uint64
	at       time.Time // wall clock, for pruning
}

// The table functions below run under m.mu and never call memberlist or
// the Handler: memberlist calls the event delegate with its own node lock
// held, so the only lock order is memberlist's, then m.mu.

func (m *Mesh) newRecordLocked(n *memberlist.Node) *record {
	r := &record{}
	m.fillLocked(r, n)
	return r
}

// fillLocked copies what memberlist knows of n into r; it reports whether
// the metadata or the address changed.
func (m *Mesh) fillLocked(r *record, n *memberlist.Node) bool {
	meta, inst, err := decodeMeta(n.Meta)
	if err != nil {
		m.log.Debug("undecodable node meta", "peer", n.Name, "err", err)
	}
	changed := r.Meta != meta || r.Addr != n.Addr.String() || r.Port != int(n.Port) || r.instance != inst
	r.Name = n.Name
	r.Addr = n.Addr.String()
	r.Port = int(n.Port)
	r.Meta = meta
	r.instance = inst
	r.node = memberlist.Node{Name: n.Name, Addr: append(net.IP(nil), n.Addr...), Port: n.Port}
	if li, ok := m.intents[n.Name]; ok && li.instance != inst {
		delete(m.intents, n.Name) // a new process under that name: the old intent is spent
	}
	return changed
}

func (m *Mesh) setStatusLocked(r *record, s Status, kind EventKind) {
	if counts(r.Status) != counts(s) {
		if counts(s) {
			m.alive++
		} else {
			m.alive--
		}
	}
	r.Status = s
	r.Since = m.cfg.Clock.Now()
	m.emitLocked(kind, r)
}

func (m *Mesh) emitLocked(kind EventKind, r *record) {
	m.events = append(m.events, MemberEvent{Kind: kind, Member: r.Member})
	signal(m.eventSig)
	if r.Name != m.cfg.Name {
		signal(m.persistSig)
	}
}

// onJoin: memberlist saw n alive for the first time, or back from dead/left.
func (m *Mesh) onJoin(n *memberlist.Node) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.members[n.Name]
	if !ok {
		r = m.newRecordLocked(n)
		m.members[n.Name] = r
		m.setStatusLocked(r, StatusAlive, MemberJoin)
		return
	}
	changed := m.fillLocked(r, n)
	switch {
	case r.Status == StatusLeft:
		m.setStatusLocked(r, StatusAlive, MemberJoin)
	case r.Status == StatusDead || r.Status == StatusSuspect:
		m.setStatusLocked(r, StatusAlive, MemberAlive)
	case changed:
		m.emitLocked(MemberUpdate, r)
	}
}

// onUpdate: n's metadata changed (or a restarted process refuted its old
// self).
// Both mean n is alive as memberlist now sees it, and are handled alike.
func (m *Mesh) onUpdate(n *memberlist.Node) { m.onJoin(n) }

// onLeave: memberlist declared n dead, or n left. memberlist does not say
// which through its API (Node.State is not kept up to date), so a leave
// intent from that very process decides: with one, "left"; without, "dead".
func (m *Mesh) onLeave(n *memberlist.Node) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.members[n.Name]
	if !ok {
		r = m.newRecordLocked(n)
		m.members[n.Name] = r
	} else {
		m.fillLocked(r, n)
	}
	li, announced := m.intents[n.Name]
	if n.Name == m.cfg.Name || (announced && li.instance == r.instance) {
		m.setStatusLocked(r, StatusLeft, MemberLeave)
		return
	}
	r.deadAt = m.cfg.Clock.Now()
	m.setStatusLocked(r, StatusDead, MemberFailed)
	if _, ok := m.claims[n.Name]; ok {
		signal(m.joinSig) // its name may soon be reclaimed
	}
}

// claim is a node at a new address that announced a name memberlist still
// gives to an older address.
type claim struct {
	addr     string    // host:port of the claimant
	at       time.Time // wall clock, first seen
	attempts int       // contacts made since it became due
}

// maxClaimAttempts bounds the contacts with a claimant that does not answer
// or is not admitted.
const maxClaimAttempts = 10

// claimTTL bounds how long a claim is remembered: a claim that never
// becomes reclaimable is two live nodes configured with one name.
const claimTTL = 10 * time.Minute

// onConflict: other announced existing's name from another address.
func (m *Mesh) onConflict(existing, other *memberlist.Node) {
	if other == nil || existing == nil {
		return
	}
	addr := other.Address()
	m.mu.Lock()
	defer m.mu.Unlock()
	if existing.Name == m.cfg.Name {
		m.log.Warn("another node claims this node's name", "peer", existing.Name, "addr", addr)
		return
	}
	if c, ok := m.claims[existing.Name]; ok && c.addr == addr {
		return
	}
	m.claims[existing.Name] = claim{addr: addr, at: m.cfg.Clock.Now()}
	m.log.Info("name claimed from a new address; will admit it once the old one is dead",
		"peer", existing.Name, "addr", addr, "old", existing.Address())
	signal(m.joinSig)
}

// onIntent records a leave intent; it reports whether it was news (and so
// worth re-gossiping).
func (m *Mesh) onIntent(li leaveIntent) bool {
	if li.name == m.cfg.Name || li.name == "" {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, known := m.members[li.name]
	if known && r.instance != li.instance {
		return false // an older (or newer) process of that name: not about the current one
	}
	if old, ok := m.intents[li.name]; ok && old.instance == li.instance {
		return false
	}
	m.intents[li.name] = intentRec{instance: li.instance, at: m.cfg.Clock.Now()}
	if known && r.Status == StatusDead {
		// It was declared dead before the intent arrived: it left. Since
		// stays the time it went away.
		r.Status = StatusLeft
		m.emitLocked(MemberLeave, r)
	}
	return true
}

// onUnreachable: a direct send to name failed. memberlist keeps its own
// suspicion private, so this node's failed contact is what "suspect" means
// here; memberlist's failure detector still decides "dead".
func (m *Mesh) onUnreachable(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.members[name]; ok && r.Status == StatusAlive && name != m.cfg.Name {
		m.setStatusLocked(r, StatusSuspect, MemberSuspect)
	}
}

// onReachable: a probe or a direct send to name succeeded.
func (m *Mesh) onReachable(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.members[name]; ok && r.Status == StatusSuspect {
		m.setStatusLocked(r, StatusAlive, MemberAlive)
	}
}

// Members lists every member this node knows, itself included, dead and
// left ones too (for Config.DepartedRetention), sorted by name.
func (m *Mesh) Members() []Member {
	m.mu.Lock()
	out := make([]Member, 0, len(m.members))
	for _, r := range m.members {
		out = append(out, r.Member)
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// NumAlive counts the members not declared dead or left, this node
// included (a suspect member still counts).
func (m *Mesh) NumAlive() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.numAliveLocked()
}

// numAliveLocked is kept as a count (m.alive, moved by setStatusLocked):
// the gossip queue asks for it at every gossip tick.
func (m *Mesh) numAliveLocked() int { return m.alive }

// counts reports whether a member in status s counts as alive.
func counts(s Status) bool { return s == StatusAlive || s == StatusSuspect }

// othersLocked returns the other members that are alive or suspect.
func (m *Mesh) othersLocked() []memberlist.Node {
	var out []memberlist.Node
	for _, r := range m.members {
		if r.Name != m.cfg.Name && (r.Status == StatusAlive || r.Status == StatusSuspect) {
			out = append(out, r.node)
		}
	}
	return out
}

// signal wakes a loop waiting on ch (capacity 1) without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
