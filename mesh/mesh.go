package mesh

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// lifecycle states of a Mesh.
const (
	stateNew = iota
	stateRunning
	stateLeft
	stateShutdown
)

// Mesh is one node's membership in the mesh. Its methods are safe for
// concurrent use.
type Mesh struct {
	cfg      Config
	log      *slog.Logger
	instance uint64 // random per process, carried in the node meta
	queue    *broadcastQueue

	list atomic.Pointer[memberlist.Memberlist] // set by Start
	kr   atomic.Pointer[memberlist.Keyring]    // set by Start; nil without encryption
	meta atomic.Pointer[[]byte]                // encoded NodeMeta
	// duplicates counts deltas dropped as already seen (tests).
	duplicates atomic.Int64
	// drops counts refused frames (Drops).
	drops dropCounters

	// lifeMu serializes Start, Leave and Shutdown.
	lifeMu sync.Mutex
	// bmu makes "newer than seen? then queue" one step, so that the queue
	// never ends up holding an older version behind a newer one. Lock
	// order: bmu, then the queue's, then mu.
	bmu sync.Mutex

	mu      sync.Mutex
	state   int
	members map[string]*record
	alive   int // members alive or suspect: numAliveLocked
	intents map[string]intentRec
	claims  map[string]claim    // name -> a new address claiming it
	seen    map[seenKey]seenRec // per origin and key
	events  []MemberEvent
	seeds   []string // Config.Join, addresses given to Join, PeersFile
	self    string   // own "host:port", once started

	eventSig   chan struct{} // capacity 1
	persistSig chan struct{} // capacity 1
	joinSig    chan struct{} // capacity 1
	direct     chan directJob
	stop       chan struct{}
	wg         sync.WaitGroup

	lastPersisted string // owned by maintLoop
}

// seenRec is the newest version of an origin's key this node has
// broadcast or received.
type seenRec struct {
	version uint64
	at      time.Time // wall clock, for pruning
}

// New checks cfg and builds a Mesh. It does no I/O: Start binds and joins.
func New(cfg Config) (*Mesh, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.MaxStateSize == 0 {
		cfg.MaxStateSize = DefaultMaxStateSize
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("mesh: instance id: %w", err)
	}
	m := &Mesh{
		cfg:        cfg,
		log:        cfg.Logger.With("node", cfg.Name),
		instance:   binary.BigEndian.Uint64(b[:]),
		members:    make(map[string]*record),
		intents:    make(map[string]intentRec),
		claims:     make(map[string]claim),
		seen:       make(map[seenKey]seenRec),
		seeds:      append([]string(nil), cfg.Join...),
		eventSig:   make(chan struct{}, 1),
		persistSig: make(chan struct{}, 1),
		joinSig:    make(chan struct{}, 1),
		direct:     make(chan directJob, max(cfg.DirectSendQueue, 1)),
		stop:       make(chan struct{}),
	}
	meta := cfg.Meta.encode(m.instance)
	m.meta.Store(&meta)
	m.queue = newBroadcastQueue(cfg.RetransmitMult, m.NumAlive)
	return m, nil
}

// Start creates the memberlist (binding its ports) and starts the Mesh's
// goroutines. It returns without waiting for a join: the seeds in
// Config.Join and the peers in PeersFile are joined in the background, with
// bounded backoff, until one answers; and again whenever this node finds
// itself alone (after a restart, a sleep or a partition).
func (m *Mesh) Start() error {
	m.lifeMu.Lock()
	defer m.lifeMu.Unlock()
	m.mu.Lock()
	st := m.state
	m.mu.Unlock()
	switch st {
	case stateRunning, stateLeft:
		return ErrAlreadyStarted
	case stateShutdown:
		return ErrShutdown
	}

	if m.cfg.PeersFile != "" {
		peers, err := loadPeers(m.cfg.PeersFile)
		if err != nil {
			m.log.Warn("persisted peers ignored", "err", err)
		}
		m.mu.Lock()
		for _, p := range peers {
			m.seeds = append(m.seeds, p.Addr)
		}
		m.mu.Unlock()
	}

	mc := m.cfg.memberlistConfig()
	if mc.Transport == nil && mc.BindPort != 0 {
		// memberlist flattens its bind errors into text: try the address
		// first, so that a port in use keeps its cause (EADDRINUSE).
		if err := probeBind(mc.BindAddr, mc.BindPort); err != nil {
			return fmt.Errorf("%w: %w", ErrBind, err)
		}
	}
	kr, err := m.cfg.keyring()
	if err != nil {
		return err
	}
	if kr != nil {
		mc.Keyring, mc.SecretKey = kr, nil
		m.kr.Store(kr)
	}
	mc.Delegate = &delegate{m: m}
	mc.Events = &eventDelegate{m: m}
	mc.Ping = &pingDelegate{m: m}
	mc.Conflict = &conflictDelegate{m: m}
	mc.Logger = memberlistLogger(m.log)
	list, err := memberlist.Create(mc)
	if err != nil {
		return fmt.Errorf("mesh: start memberlist on %s:%d: %w", mc.BindAddr, mc.BindPort, err)
	}
	m.list.Store(list)
	local := list.LocalNode()

	m.mu.Lock()
	m.state = stateRunning
	m.self = net.JoinHostPort(local.Addr.String(), strconv.Itoa(int(local.Port)))
	m.mu.Unlock()

	m.goLoop(m.eventLoop)
	m.goLoop(m.maintLoop)
	m.goLoop(m.joinLoop)
	if m.cfg.DirectSendMax > 0 {
		for i := 0; i < m.cfg.DirectSendWorkers; i++ {
			m.goLoop(m.directWorker)
		}
	}
	m.log.Info("mesh started", "addr", m.self, "encrypted", len(m.cfg.SecretKey) > 0)
	return nil
}

func (m *Mesh) goLoop(f func()) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		f()
	}()
}

// running returns the memberlist if the Mesh is started and has neither
// left nor shut down.
func (m *Mesh) running() (*memberlist.Memberlist, error) {
	m.mu.Lock()
	st := m.state
	m.mu.Unlock()
	switch st {
	case stateNew:
		return nil, ErrNotStarted
	case stateRunning:
		return m.list.Load(), nil
	}
	return nil, ErrShutdown
}

// LocalName is this node's name.
func (m *Mesh) LocalName() string { return m.cfg.Name }

// LocalAddr is the "host:port" other nodes reach this one at ("" before
// Start).
func (m *Mesh) LocalAddr() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.self
}

// Join contacts addrs ("host:port") now and merges state with each that
// answers. It returns how many answered; the error is nil if at least one
// did, else it wraps ErrKeyMismatch (the keys differ) or ErrJoin. The
// addresses are remembered for rejoining.
func (m *Mesh) Join(addrs []string) (int, error) {
	list, err := m.running()
	if err != nil {
		return 0, err
	}
	m.addSeeds(addrs)
	n, err := list.Join(addrs)
	if n > 0 {
		return n, nil
	}
	if err == nil {
		return 0, fmt.Errorf("%w: no address given", ErrJoin)
	}
	return 0, classifyJoinErr(err)
}

func (m *Mesh) addSeeds(addrs []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	known := make(map[string]bool, len(m.seeds))
	for _, s := range m.seeds {
		known[s] = true
	}
	for _, a := range addrs {
		if !known[a] {
			m.seeds = append(m.seeds, a)
			known[a] = true
		}
	}
}

// Broadcast sends a delta for key to every other node: by gossip always,
// and by a reliable direct send to each other alive member when the mesh
// has at most Config.DirectSendMax members. An older queued version of the
// same key is invalidated; a version older than one this node already
// broadcast for key is dropped (nil error). With a Signer the frame is
// signed. The encoded frame must fit MaxFrameSize, else ErrTooLarge.
func (m *Mesh) Broadcast(key string, version uint64, delta []byte) error {
	body := encodeBody(m.cfg.Name, key, version, delta)
	var frame []byte
	if s := m.cfg.Signer; s != nil {
		if len(body)+1+2+MaxSignatureSize > MaxFrameSize {
			return m.tooLarge(len(body) + 1 + 2 + MaxSignatureSize)
		}
		sig, err := s.Sign(signedMsg(deltaDomain, body))
		if err != nil {
			return fmt.Errorf("mesh: sign delta %q: %w", key, err)
		}
		if len(sig) > MaxSignatureSize {
			return fmt.Errorf("%w: the Signer returned %d bytes, over MaxSignatureSize %d", ErrConfig, len(sig), MaxSignatureSize)
		}
		frame = signedFrame(sig, body)
	} else {
		frame = append([]byte{msgDelta}, body...)
	}
	if len(frame) > MaxFrameSize {
		return m.tooLarge(len(frame))
	}
	if _, err := m.running(); err != nil {
		return err
	}
	sk := seenKey{m.cfg.Name, key}
	m.bmu.Lock()
	defer m.bmu.Unlock()
	m.mu.Lock()
	if s, ok := m.seen[sk]; ok && s.version > version {
		m.mu.Unlock()
		m.log.Debug("stale broadcast dropped", "key", key, "version", version, "newest", s.version)
		return nil
	}
	m.seen[sk] = seenRec{version: version, at: m.cfg.Clock.Now()}
	var targets []memberlist.Node
	if m.cfg.DirectSendMax > 0 && m.numAliveLocked() <= m.cfg.DirectSendMax {
		targets = m.othersLocked()
	}
	m.mu.Unlock()

	m.queue.queue(&broadcast{kind: msgDelta, origin: m.cfg.Name, key: key, version: version, msg: frame})
	for _, to := range targets {
		m.enqueueDirect(directJob{kind: msgDelta, key: key, version: version, frame: frame, to: to})
	}
	return nil
}

func (m *Mesh) tooLarge(n int) error {
	return fmt.Errorf("%w: %d bytes with its header and signature room, the limit is %d (send less, or let push/pull carry it)",
		ErrTooLarge, n, MaxFrameSize)
}

// SetMeta changes this node's metadata and gossips it, waiting up to
// timeout for the update to go out.
func (m *Mesh) SetMeta(meta NodeMeta, timeout time.Duration) error {
	if err := meta.validate(); err != nil {
		return err
	}
	b := meta.encode(m.instance)
	if len(b) > memberlist.MetaMaxSize {
		return fmt.Errorf("%w: Meta encodes to %d bytes, over memberlist's %d", ErrConfig, len(b), memberlist.MetaMaxSize)
	}
	list, err := m.running()
	if err != nil {
		return err
	}
	m.meta.Store(&b)
	if err := list.UpdateNode(timeout); err != nil {
		return fmt.Errorf("%w: meta update not yet gossiped: %w", ErrTimeout, err)
	}
	return nil
}

func (m *Mesh) encodedMeta() []byte { return *m.meta.Load() }

// Leave announces that this node leaves on purpose, so that the others
// list it as "left" rather than "dead", then leaves the memberlist. It
// waits up to timeout in all (0: no limit). The Mesh keeps answering
// gossip until Shutdown, but broadcasts no more. Calling it twice, or after
// Shutdown, does nothing.
func (m *Mesh) Leave(timeout time.Duration) error {
	m.lifeMu.Lock()
	defer m.lifeMu.Unlock()
	m.mu.Lock()
	st := m.state
	if st == stateRunning {
		m.state = stateLeft
	}
	targets := m.othersLocked()
	m.mu.Unlock()
	switch st {
	case stateNew:
		return ErrNotStarted
	case stateLeft, stateShutdown:
		return nil
	}
	list := m.list.Load()
	// Real time, not cfg.Clock: the bound is on real network sends, and
	// memberlist's Leave below takes real time too.
	start := time.Now() //clock:real the bound is on memberlist's real sends

	// 1. The intent, by gossip and (in small meshes) by direct sends.
	intent := encodeLeave(leaveIntent{name: m.cfg.Name, instance: m.instance})
	gossiped := make(chan struct{}, 1)
	m.queue.queue(&broadcast{kind: msgLeave, key: m.cfg.Name, msg: intent, notify: gossiped})
	sent := make(chan struct{}, len(targets))
	direct := 0
	if m.cfg.DirectSendMax > 0 && len(targets)+1 <= m.cfg.DirectSendMax {
		for _, to := range targets {
			job := directJob{kind: msgLeave, key: m.cfg.Name, frame: intent, to: to, done: sent}
			if m.enqueueDirect(job) {
				direct++
			}
		}
	}
	if len(targets) > 0 {
		var limit <-chan time.Time
		if timeout > 0 {
			t := time.NewTimer(timeout / 2) //clock:real as start above
			defer t.Stop()
			limit = t.C
		}
		m.waitIntent(gossiped, sent, direct, limit)
	}

	// 2. memberlist's own leave: a dead message about itself from itself.
	remaining := time.Duration(0)
	if timeout > 0 {
		remaining = max(timeout-time.Since(start), time.Millisecond) //clock:real memberlist's Leave takes real time
	}
	err := list.Leave(remaining)
	m.log.Info("mesh left", "took", time.Since(start).Round(time.Millisecond)) //clock:real as start above
	if err != nil {
		return fmt.Errorf("%w: leave not yet gossiped: %w", ErrTimeout, err)
	}
	return nil
}

// waitIntent waits until every direct send of the leave intent finished or,
// with none, until gossip finished transmitting it; or until limit fires.
func (m *Mesh) waitIntent(gossiped, sent <-chan struct{}, direct int, limit <-chan time.Time) {
	if direct == 0 {
		select {
		case <-gossiped:
		case <-limit:
		case <-m.stop:
		}
		return
	}
	for ; direct > 0; direct-- {
		select {
		case <-sent:
		case <-limit:
			return
		case <-m.stop:
			return
		}
	}
}

// Shutdown stops the Mesh without announcing it (call Leave first for a
// graceful exit): memberlist stops, every goroutine of the Mesh is waited
// for, and a pending PeersFile write is flushed. Calling it twice does
// nothing.
func (m *Mesh) Shutdown() error {
	m.lifeMu.Lock()
	defer m.lifeMu.Unlock()
	m.mu.Lock()
	st := m.state
	m.state = stateShutdown
	m.mu.Unlock()
	switch st {
	case stateShutdown:
		return nil
	case stateNew:
		close(m.stop)
		return nil
	}
	close(m.stop)
	var err error
	if list := m.list.Load(); list != nil {
		if e := list.Shutdown(); e != nil {
			err = fmt.Errorf("mesh: shutdown memberlist: %w", e)
		}
	}
	m.wg.Wait()
	m.log.Info("mesh shut down")
	return err
}
