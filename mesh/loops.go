package mesh

import (
	"math/rand/v2"
	"time"

	"github.com/hashicorp/memberlist"
)

// The Mesh's goroutines. Each is started by Start, stops when m.stop closes,
// and is waited for by Shutdown.

// eventLoop delivers member events to the Handler, in order, outside every
// lock.
func (m *Mesh) eventLoop() {
	for {
		select {
		case <-m.stop:
			return
		case <-m.eventSig:
		}
		for {
			m.mu.Lock()
			evs := m.events
			m.events = nil
			m.mu.Unlock()
			if len(evs) == 0 {
				break
			}
			for _, ev := range evs {
				select {
				case <-m.stop:
					return
				default:
				}
				m.cfg.Handler.MemberEvent(ev)
			}
		}
	}
}

// maintLoop persists the peers (debounced after membership changes) and
// prunes what mesh remembers: seen versions, departed members, intents and
// the gossip queue.
func (m *Mesh) maintLoop() {
	pruneEvery := min(max(m.cfg.SeenRetention/4, 10*time.Millisecond), time.Minute)
	clk := m.cfg.Clock
	prune := clk.NewTicker(pruneEvery)
	defer prune.Stop()
	debounce := clk.NewTimer(time.Hour)
	debounce.Stop()
	pending := false
	for {
		select {
		case <-m.stop:
			if pending {
				m.persistPeers()
			}
			return
		case <-m.persistSig:
			if !pending {
				pending = true
				debounce.Reset(m.cfg.PersistDelay)
			}
		case <-debounce.C():
			pending = false
			m.persistPeers()
		case <-prune.C():
			m.prune()
		}
	}
}

func (m *Mesh) prune() {
	now := m.cfg.Clock.Now()
	m.mu.Lock()
	if m.cfg.SeenRetention > 0 {
		for k, s := range m.seen {
			if now.Sub(s.at) > m.cfg.SeenRetention {
				delete(m.seen, k)
			}
		}
	}
	if m.cfg.DepartedRetention > 0 {
		for name, r := range m.members {
			departed := r.Status == StatusDead || r.Status == StatusLeft
			if departed && name != m.cfg.Name && now.Sub(r.Since) > m.cfg.DepartedRetention {
				delete(m.members, name)
			}
		}
	}
	for name := range m.intents {
		if _, ok := m.members[name]; !ok && now.Sub(m.intents[name].at) > m.cfg.SeenRetention {
			delete(m.intents, name)
		}
	}
	m.mu.Unlock()
	m.queue.prune(m.cfg.MaxQueueDepth)
}

// joinLoop keeps this node in a mesh. While it is alone (it just started,
// woke from sleep, or was cut off), it tries its seeds, persisted peers and
// failed members one at a time, with backoff from JoinBackoffMin to
// JoinBackoffMax, until one answers. While it is in a mesh, it tries one
// failed member every ReconnectInterval, so that a healed partition merges.
// And it admits nodes that came back at a new address (serveClaims).
func (m *Mesh) joinLoop() {
	clk := m.cfg.Clock
	backoff := m.cfg.JoinBackoffMin
	nextJoin := clk.Now()
	timer := clk.NewTimer(0)
	defer timer.Stop()
	var lastErr string
	for {
		select {
		case <-m.stop:
			return
		case <-timer.C():
		case <-m.joinSig:
		}
		list, err := m.running()
		if err != nil {
			return // left: never rejoin by itself
		}
		if !clk.Now().Before(nextJoin) {
			nextJoin = clk.Now().Add(m.joinOrReconnect(list, &backoff, &lastErr))
		}
		wait := nextJoin.Sub(clk.Now())
		if d, ok := m.serveClaims(list); ok && d < wait {
			wait = d
		}
		timer.Reset(max(wait, 0))
	}
}

// joinOrReconnect does one round of joinLoop's work and returns the delay
// to the next.
func (m *Mesh) joinOrReconnect(list *memberlist.Memberlist, backoff *time.Duration, lastErr *string) time.Duration {
	next := m.cfg.ReconnectInterval
	if next <= 0 {
		next = m.cfg.JoinBackoffMax
	}
	if m.NumAlive() > 1 {
		*backoff = m.cfg.JoinBackoffMin
		if addr := m.randomFailed(); addr != "" && m.cfg.ReconnectInterval > 0 {
			if n, _ := list.Join([]string{addr}); n > 0 {
				m.log.Debug("reconnected to a failed member", "addr", addr)
			}
		}
		return next
	}
	cands := m.joinCandidates()
	if len(cands) == 0 {
		return next
	}
	if err := m.joinOne(list, cands); err != nil {
		if msg := err.Error(); msg != *lastErr {
			m.log.Warn("join failed; retrying", "err", err, "backoff", *backoff)
			*lastErr = msg
		}
		d := *backoff
		*backoff = min(2**backoff, m.cfg.JoinBackoffMax)
		return d
	}
	*lastErr = ""
	*backoff = m.cfg.JoinBackoffMin
	return m.cfg.JoinBackoffMin // look again soon: was it enough?
}

// serveClaims contacts each node that claimed a name from a new address
// once memberlist will let it have the name: right away if the old holder
// left, DeadNodeReclaimTime after it was declared dead. The push/pull with
// the claimant carries its alive message in and tells it that its old self
// is dead, which it refutes, so the new address spreads by gossip instead
// of waiting for a periodic push/pull (30 s on LAN). It returns how long
// until the next claim is due, if one is pending on a timer.
func (m *Mesh) serveClaims(list *memberlist.Memberlist) (time.Duration, bool) {
	now := m.cfg.Clock.Now()
	reclaim := m.cfg.DeadNodeReclaimTime
	var due []string
	var wait time.Duration
	pending := false
	m.mu.Lock()
	for name, c := range m.claims {
		r, ok := m.members[name]
		switch {
		case now.Sub(c.at) > claimTTL || c.attempts >= maxClaimAttempts:
			delete(m.claims, name)
		case ok && r.Address() == c.addr && r.Status == StatusAlive:
			delete(m.claims, name) // admitted
		case ok && r.Status == StatusLeft:
			due = append(due, c.addr)
			c.attempts++
			m.claims[name] = c
		case ok && r.Status == StatusDead && reclaim > 0:
			ready := r.deadAt.Add(reclaim + reclaim/10 + time.Millisecond)
			if !now.Before(ready) {
				due = append(due, c.addr)
				c.attempts++
				m.claims[name] = c
			} else if d := ready.Sub(now); !pending || d < wait {
				wait, pending = d, true
			}
		}
	}
	m.mu.Unlock()
	for _, addr := range due {
		if n, err := list.Join([]string{addr}); n > 0 {
			m.log.Debug("contacted a node at its new address", "addr", addr)
		} else {
			m.log.Debug("node at a new address did not answer", "addr", addr, "err", err)
		}
	}
	if len(due) > 0 && (!pending || wait > m.cfg.JoinBackoffMin) {
		// Check soon whether it was admitted; try again if not.
		wait, pending = m.cfg.JoinBackoffMin, true
	}
	return wait, pending
}

// joinOne tries the candidates in random order and stops at the first that
// answers.
func (m *Mesh) joinOne(list *memberlist.Memberlist, cands []string) error {
	rand.Shuffle(len(cands), func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
	var last error
	for _, addr := range cands {
		select {
		case <-m.stop:
			return ErrShutdown
		default:
		}
		n, err := list.Join([]string{addr})
		if n > 0 {
			m.log.Info("joined", "addr", addr, "alive", m.NumAlive())
			return nil
		}
		last = classifyJoinErr(err)
	}
	return last
}

// joinCandidates: seeds, persisted peers and the addresses of failed
// members, without this node's own address.
func (m *Mesh) joinCandidates() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[string]bool{m.self: true}
	var out []string
	add := func(a string) {
		if a != "" && !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	for _, s := range m.seeds {
		add(s)
	}
	for _, r := range m.members {
		if r.Name != m.cfg.Name && r.Status == StatusDead {
			add(r.Address())
		}
	}
	return out
}

// randomFailed is the address of one member declared dead (not left), or "".
func (m *Mesh) randomFailed() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var dead []string
	for _, r := range m.members {
		if r.Name != m.cfg.Name && r.Status == StatusDead {
			dead = append(dead, r.Address())
		}
	}
	if len(dead) == 0 {
		return ""
	}
	return dead[rand.IntN(len(dead))]
}

// directJob is one reliable direct send of a frame to one member.
type directJob struct {
	kind    byte
	key     string
	version uint64
	frame   []byte
	to      memberlist.Node
	done    chan<- struct{} // optional; must have room
}

// enqueueDirect hands a job to the worker pool without blocking; a full
// queue drops it (gossip still carries the message).
func (m *Mesh) enqueueDirect(j directJob) bool {
	select {
	case m.direct <- j:
		return true
	default:
		m.log.Debug("direct send queue full; relying on gossip", "peer", j.to.Name, "key", j.key)
		return false
	}
}

func (m *Mesh) directWorker() {
	for {
		select {
		case <-m.stop:
			return
		case j := <-m.direct:
			m.sendDirect(j)
		}
	}
}

func (m *Mesh) sendDirect(j directJob) {
	defer func() {
		if j.done != nil {
			j.done <- struct{}{}
		}
	}()
	if j.kind == msgDelta {
		m.mu.Lock()
		s, ok := m.seen[seenKey{m.cfg.Name, j.key}] // direct sends carry own deltas only
		m.mu.Unlock()
		if ok && s.version > j.version {
			return // a newer version of the key is on its way
		}
	}
	list := m.list.Load()
	if err := list.SendReliable(&j.to, j.frame); err != nil {
		select {
		case <-m.stop:
			return
		default:
		}
		m.log.Debug("direct send failed", "peer", j.to.Name, "key", j.key, "err", err)
		m.onUnreachable(j.to.Name)
		return
	}
	m.onReachable(j.to.Name)
}
