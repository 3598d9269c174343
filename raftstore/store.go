// Package raftstore is harn's Raft-replicated session registry: the facts
// about every agent session that must survive the loss of the session's
// node (identity, task, lifecycle, end, last known activity).
//
// A Store is one server of the raft group. Writes (Apply) go to the leader
// and return once committed and applied there; any store serves reads from
// its local replica (Get, List) and says how stale they may be
// (Staleness); VerifyRead on the leader makes the following local reads
// linearizable. The state machine is a Registry, a plain map with
// last-writer-wins field groups that is tested without raft. See DESIGN.md
// in this folder.
package raftstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/harn-dev/harn/raftstore/raftwire"
	"github.com/hashicorp/raft"
)

// Log keys.
const (
	keyID    = "raft_id"
	keyAddr  = "raft_addr"
	keyErr   = "err"
	keyIndex = "index"
	keyCount = "servers"
)

// Server is one member of the raft configuration.
type Server = raftwire.Server

// ReadInfo says how fresh this store's local reads are.
type ReadInfo struct {
	// LeaderID is the leader this store knows of ("" when none).
	LeaderID string `json:"leader_id"`
	// LastContact is the time since the leader was last heard from: 0 on
	// the leader, -1 when no leader was ever heard from.
	LastContact time.Duration `json:"last_contact"`
	// AppliedIndex is the log index the local registry reflects.
	AppliedIndex uint64 `json:"applied_index"`
	// Stale is true when no leader is known or it was last heard from
	// longer ago than Config.StaleAfter.
	Stale bool `json:"stale"`
}

type storeState int

const (
	stateNew storeState = iota
	stateOpen
	stateClosed
)

// Store is one raft server holding a replica of the registry. It is safe
// for concurrent use.
type Store struct {
	cfg  Config
	log  *slog.Logger
	reg  *Registry
	fsm  *fsm
	feed *feed // the fsm's: entries for the watchers

	mu     sync.RWMutex // guards state and the fields set by Open
	state  storeState
	raft   *raft.Raft
	trans  raft.Transport
	logs   raft.LogStore
	stable raft.StableStore
	snaps  raft.SnapshotStore
	owned  []io.Closer       // closed by Close, in order (transport, bolt)
	guard  *guardedTransport // nil with a transport from the config

	stop chan struct{} // closed by Close
	// futures counts goroutines waiting on raft futures (see wait).
	futures sync.WaitGroup

	// leaderMu guards leaderCh, closed and replaced when raft observes a
	// new leader (the watchers report it at once); observing is the
	// goroutine that reads raft's observations, waited for by Close.
	leaderMu  sync.Mutex
	leaderCh  chan struct{}
	observer  *raft.Observer
	observing sync.WaitGroup
}

// New checks cfg and returns a Store. It does no I/O; call Open.
func New(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	log := cfg.Logger.With(slog.String(keyID, cfg.ID))
	reg := NewRegistry()
	f := newFSM(reg, log)
	f.private = cfg.PrivateKV
	return &Store{cfg: cfg, log: log, reg: reg, fsm: f, feed: f.feed, stop: make(chan struct{}), leaderCh: make(chan struct{})}, nil
}

// Open opens the stores and the transport and starts raft. The registry
// is restored from the latest snapshot; entries after it are applied as
// the commit index becomes known. A store opens once.
func (s *Store) Open() (err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case stateOpen:
		return fmt.Errorf("%w: store %s is already open", ErrConfig, s.cfg.ID)
	case stateClosed:
		return ErrClosed
	}
	defer func() {
		if err != nil {
			for _, c := range s.owned {
				c.Close()
			}
			s.owned = nil
		}
	}()
	hl := newHCLog(s.log, "raft")
	if err := s.openStores(hl); err != nil {
		return err
	}
	s.trans = s.cfg.Transport
	if s.trans == nil {
		stream, err := NewStreamLayer(s.cfg.BindAddr, s.cfg.AdvertiseAddr, s.cfg.TLS)
		if err != nil {
			return err
		}
		nt := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
			Stream:  stream,
			MaxPool: s.cfg.MaxPool,
			Timeout: s.cfg.IOTimeout,
			Logger:  hl.Named("net"),
		})
		g := &guardedTransport{NetworkTransport: nt}
		s.trans, s.guard = g, g
		s.owned = append([]io.Closer{nt}, s.owned...)
	}
	rc := s.cfg.raftConfig()
	rc.Logger = hl
	r, err := raft.NewRaft(rc, s.fsm, s.logs, s.stable, s.snaps, s.trans)
	if err != nil {
		return fmt.Errorf("start raft %s: %w", s.cfg.ID, err)
	}
	s.raft = r
	s.observe(r)
	s.state = stateOpen
	s.log.Info("raft store open", slog.String(keyAddr, string(s.trans.LocalAddr())))
	return nil
}

// Close stops raft, waits for every goroutine the store started, and
// closes what it opened. It is safe to call twice.
func (s *Store) Close() error {
	s.mu.Lock()
	prev := s.state
	if prev == stateClosed {
		s.mu.Unlock()
		return nil
	}
	s.state = stateClosed
	close(s.stop)
	r, owned, guard := s.raft, s.owned, s.guard
	s.owned = nil
	s.mu.Unlock()
	if prev != stateOpen {
		return nil
	}
	var errs []error
	r.DeregisterObserver(s.observer)
	s.observing.Wait()
	if err := r.Shutdown().Error(); err != nil {
		errs = append(errs, fmt.Errorf("raft shutdown: %w", err))
	}
	if guard != nil {
		guard.quiesce() // no heartbeat may reach the stores closed below
	}
	// Waiters on futures: raft resolves nearly every future at shutdown,
	// but not one still queued (a VerifyLeader behind the 64-deep verify
	// queue). Wait a bounded time; a waiter still blocked then is parked on
	// a future nothing will answer and holds nothing else.
	waited := make(chan struct{})
	go func() { s.futures.Wait(); close(waited) }()
	drain := s.cfg.clock().NewTimer(futureDrain)
	defer drain.Stop()
	select {
	case <-waited:
	case <-drain.C():
		s.log.Warn("raft store closed with future waiters left", "after", futureDrain)
	}
	for _, c := range owned {
		if err := c.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	s.log.Info("raft store closed")
	return errors.Join(errs...)
}

// observe watches raft's leader observations until the store closes.
func (s *Store) observe(r *raft.Raft) {
	ch := make(chan raft.Observation, 4)
	s.observer = raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	r.RegisterObserver(s.observer)
	s.observing.Add(1)
	go func() {
		defer s.observing.Done()
		for {
			select {
			case <-ch:
				s.leaderMu.Lock()
				close(s.leaderCh)
				s.leaderCh = make(chan struct{})
				s.leaderMu.Unlock()
			case <-s.stop:
				return
			}
		}
	}()
}

// LeaderChanged is closed when raft next observes a leader change.
func (s *Store) LeaderChanged() <-chan struct{} {
	s.leaderMu.Lock()
	defer s.leaderMu.Unlock()
	return s.leaderCh
}

// running returns raft, or ErrClosed when the store is not open.
func (s *Store) running() (*raft.Raft, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.state != stateOpen {
		return nil, ErrClosed
	}
	return s.raft, nil
}

// futureDrain bounds how long Close waits for goroutines parked on raft
// futures after raft shut down.
const futureDrain = 2 * time.Second

// wait waits for a raft future, or for ctx. When ctx ends first the
// future is left to a goroutine that Close waits for, for a bounded time.
func (s *Store) wait(ctx context.Context, f raft.Future) error {
	if ctx.Done() == nil {
		return f.Error()
	}
	s.mu.RLock()
	if s.state != stateOpen {
		s.mu.RUnlock()
		return ErrClosed
	}
	s.futures.Add(1)
	s.mu.RUnlock()
	done := make(chan error, 1)
	go func() {
		defer s.futures.Done()
		done <- f.Error()
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// timeoutOf is the time left before ctx's deadline (0: none, which raft
// reads as no enqueue timeout).
func timeoutOf(ctx context.Context) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		if d := time.Until(dl); d > 0 { //clock:real a context's deadline is wall time
			return d
		}
		return time.Nanosecond
	}
	return 0
}

// notLeader names the leader this store knows of.
func (s *Store) notLeader(r *raft.Raft) error {
	addr, id := r.LeaderWithID()
	return &NotLeaderError{LeaderID: string(id), LeaderAddr: string(addr)}
}

// HasState reports whether raft state exists (a restart: do not bootstrap
// again). The store must be open.
func (s *Store) HasState() (bool, error) {
	if _, err := s.running(); err != nil {
		return false, err
	}
	ok, err := raft.HasExistingState(s.logs, s.stable, s.snaps)
	if err != nil {
		return false, fmt.Errorf("read raft state: %w", err)
	}
	return ok, nil
}

// Addr is the address other servers reach this store at.
func (s *Store) Addr() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.trans == nil {
		return ""
	}
	return string(s.trans.LocalAddr())
}

// ID is this store's raft id.
func (s *Store) ID() string { return s.cfg.ID }

// Bootstrap writes the first configuration: servers, which must include
// this store; none means this store alone, as a voter (a lone machine).
// When raft state exists already it does nothing and returns nil, so that
// a restart may call it again.
func (s *Store) Bootstrap(servers []Server) error {
	r, err := s.running()
	if err != nil {
		return err
	}
	if len(servers) == 0 {
		servers = []Server{{ID: s.cfg.ID, Addr: s.Addr(), Voter: true}}
	}
	conf := raft.Configuration{}
	seen := map[string]bool{}
	self, voters := false, 0
	for _, sv := range servers {
		if sv.ID == "" || sv.Addr == "" {
			return fmt.Errorf("%w: bootstrap server %+v needs an ID and an Addr", ErrConfig, sv)
		}
		if seen[sv.ID] {
			return fmt.Errorf("%w: bootstrap server %s is listed twice", ErrConfig, sv.ID)
		}
		seen[sv.ID] = true
		if sv.ID == s.cfg.ID {
			if !sv.Voter {
				return fmt.Errorf("%w: only a voter bootstraps; %s is listed as a non-voter", ErrConfig, sv.ID)
			}
			self = true
		}
		suffrage := raft.Nonvoter
		if sv.Voter {
			suffrage, voters = raft.Voter, voters+1
		}
		conf.Servers = append(conf.Servers, raft.Server{
			ID: raft.ServerID(sv.ID), Address: raft.ServerAddress(sv.Addr), Suffrage: suffrage})
	}
	if !self {
		return fmt.Errorf("%w: bootstrap servers do not include this store (%s)", ErrConfig, s.cfg.ID)
	}
	if voters == 0 {
		return fmt.Errorf("%w: bootstrap needs at least one voter", ErrConfig)
	}
	err = r.BootstrapCluster(conf).Error()
	if errors.Is(err, raft.ErrCantBootstrap) {
		s.log.Info("raft state exists; bootstrap skipped")
		return nil
	}
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	s.log.Info("raft cluster bootstrapped", slog.Int(keyCount, len(servers)))
	return nil
}

// Apply proposes cmd and returns its log index once it is committed and
// applied on this store, the leader. On another store it returns a
// *NotLeaderError (callers forward to the leader it names). ctx bounds the
// wait; when it ends after the entry was handed to raft, the error wraps
// ErrUnknownOutcome.
func (s *Store) Apply(ctx context.Context, cmd Command) (uint64, error) {
	b, err := EncodeCommand(cmd)
	if err != nil {
		return 0, err
	}
	r, err := s.running()
	if err != nil {
		return 0, err
	}
	if r.State() != raft.Leader {
		return 0, s.notLeader(r)
	}
	f := r.Apply(b, timeoutOf(ctx))
	if err := s.wait(ctx, f); err != nil {
		return 0, s.mapErr(r, err)
	}
	if err, ok := f.Response().(error); ok && err != nil {
		return f.Index(), err
	}
	return f.Index(), nil
}

// mapErr turns raft's errors into this package's.
func (s *Store) mapErr(r *raft.Raft, err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return s.notLeader(r) // refused before it entered the log
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return fmt.Errorf("raft apply queue: %w", context.DeadlineExceeded)
	case errors.Is(err, raft.ErrRaftShutdown), errors.Is(err, ErrClosed):
		return fmt.Errorf("%w: %w", ErrUnknownOutcome, ErrClosed)
	case errors.Is(err, raft.ErrLeadershipLost):
		return fmt.Errorf("%w: %w: leadership lost", ErrUnknownOutcome, ErrNotLeader)
	}
	return fmt.Errorf("%w: %w", ErrUnknownOutcome, err)
}

// Get returns one record from the local replica (possibly stale; see
// Staleness and VerifyRead).
func (s *Store) Get(id string) (Record, bool) { return s.reg.Get(id) }

// List returns every record of the local replica, by session id.
func (s *Store) List() []Record { return s.reg.List() }

// Records returns the local replica's records in no particular order.
func (s *Store) Records() []Record { return s.reg.Records() }

// Staleness says how fresh the local replica is.
func (s *Store) Staleness() ReadInfo {
	info := ReadInfo{AppliedIndex: s.fsm.appliedIndex(), LastContact: -1, Stale: true}
	r, err := s.running()
	if err != nil {
		return info
	}
	if r.State() == raft.Leader {
		info.LeaderID, info.LastContact, info.Stale = s.cfg.ID, 0, false
		return info
	}
	_, id := r.LeaderWithID()
	info.LeaderID = string(id)
	if lc := r.LastContact(); !lc.IsZero() {
		info.LastContact = time.Since(lc) //clock:real raft's LastContact is its own wall time
		info.Stale = info.LeaderID == "" || info.LastContact > s.cfg.staleAfter()
	}
	return info
}

// VerifyRead makes the next local reads linearizable: on the leader it
// confirms leadership with a quorum (VerifyLeader) and waits until every
// committed entry is applied locally (Barrier). Elsewhere it returns a
// *NotLeaderError (wrapping ErrNoLeader when there is no leader).
func (s *Store) VerifyRead(ctx context.Context) error {
	r, err := s.running()
	if err != nil {
		return err
	}
	if r.State() != raft.Leader {
		return s.notLeader(r)
	}
	if err := s.wait(ctx, r.VerifyLeader()); err != nil {
		return s.readErr(r, err)
	}
	if err := s.wait(ctx, r.Barrier(timeoutOf(ctx))); err != nil {
		return s.readErr(r, err)
	}
	return nil
}

func (s *Store) readErr(r *raft.Raft, err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost),
		errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return s.notLeader(r)
	case errors.Is(err, raft.ErrRaftShutdown):
		return ErrClosed
	}
	return fmt.Errorf("verify read: %w", err)
}

// Leader returns the leader this store knows of ("" when none).
func (s *Store) Leader() (id, addr string) {
	r, err := s.running()
	if err != nil {
		return "", ""
	}
	a, i := r.LeaderWithID()
	return string(i), string(a)
}

// IsLeader reports whether this store is the leader.
func (s *Store) IsLeader() bool {
	r, err := s.running()
	return err == nil && r.State() == raft.Leader
}

// WaitForLeader waits until this store knows a leader.
func (s *Store) WaitForLeader(ctx context.Context) error {
	t := s.cfg.clock().NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		r, err := s.running()
		if err != nil {
			return err
		}
		if _, id := r.LeaderWithID(); id != "" {
			return nil
		}
		select {
		case <-t.C():
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrNoLeader, ctx.Err())
		case <-s.stop:
			return ErrClosed
		}
	}
}

// WaitForApplied waits until the local registry reflects log index index
// (read-your-writes on a follower: pass the index Apply returned).
func (s *Store) WaitForApplied(ctx context.Context, index uint64) error {
	return s.fsm.waitApplied(ctx, index, s.stop)
}

// Snapshot takes a snapshot now and compacts the log behind it.
func (s *Store) Snapshot() error {
	r, err := s.running()
	if err != nil {
		return err
	}
	err = r.Snapshot().Error()
	if err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) {
		return fmt.Errorf("snapshot: %w", err)
	}
	return nil
}
