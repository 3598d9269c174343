package raftstore

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/hashicorp/raft"

	"github.com/harn-dev/harn/util/clock"
)

// Config configures a Store. Start from DefaultConfig (or TestConfig) and
// set ID, Dir and the addresses.
type Config struct {
	// ID is this server's raft id, stable across restarts (the node name).
	ID string
	// Dir holds raft's state: raft.db (bolt: log and stable store) and
	// snapshots/. Unused when InMemory.
	Dir string
	// BindAddr is the TCP address the raft listener binds ("host:port";
	// port 0 picks a free one). Unused when Transport is set.
	BindAddr string
	// AdvertiseAddr is the address other servers dial; empty means the
	// bound address, which must then not be unspecified (0.0.0.0).
	AdvertiseAddr string
	// Voter tells whether this server is meant to vote. It is a hint for
	// the caller's bootstrap and join; membership decides.
	Voter bool
	// TLS, when set, wraps every raft connection in TLS with this config
	// (for both accepting and dialing). Nil means plain TCP.
	TLS *tls.Config

	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	CommitTimeout      time.Duration
	// SnapshotThreshold is the number of entries after which raft takes a
	// snapshot (checked every SnapshotInterval).
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	// TrailingLogs is the number of entries kept after a snapshot, so
	// that a slow follower can catch up without a snapshot install.
	TrailingLogs uint64
	// SnapshotRetain is the number of snapshots kept on disk.
	SnapshotRetain int
	// MaxPool is the number of pooled connections per peer.
	MaxPool int
	// IOTimeout bounds one raft RPC over the network transport.
	IOTimeout time.Duration
	// MembershipTimeout bounds AddVoter, AddNonvoter, RemoveServer and
	// the configuration reads of Stats.
	MembershipTimeout time.Duration
	// StaleAfter: a follower whose last contact with a leader is older
	// than this reports its reads as stale. Zero means 3 × HeartbeatTimeout.
	StaleAfter time.Duration
	// PrivateKV are key-value prefixes withheld from watchers that are
	// not servers (Watch.Snapshot(false), FeedEntry.Private): secrets a
	// server needs and no other node does.
	PrivateKV []string
	// NoSync skips fsync of the bolt log (benchmarks of a bare path only;
	// a crash can lose acknowledged writes).
	NoSync bool

	// Clock arms the store's own waits (nil: the real clock); raft's
	// internals keep their own time.
	Clock clock.Clock
	// Logger receives the store's and raft's logs (nil: slog.Default()).
	Logger *slog.Logger

	// Transport, when set, replaces the TCP transport (tests inject a
	// raft.InmemTransport). The caller owns and closes it.
	Transport raft.Transport
	// InMemory keeps the log, stable store and snapshots in memory (tests
	// only; nothing survives Close).
	InMemory bool
	// LogStore, StableStore and SnapshotStore, when set, replace the
	// stores that Dir or InMemory would give (tests reuse in-memory stores
	// across a restart). The caller owns and closes them.
	LogStore      raft.LogStore
	StableStore   raft.StableStore
	SnapshotStore raft.SnapshotStore
}

// DefaultConfig returns LAN timers (1 s heartbeat and election timeouts)
// and raft's usual snapshot settings.
func DefaultConfig() Config {
	return Config{
		Voter:              true,
		HeartbeatTimeout:   time.Second,
		ElectionTimeout:    time.Second,
		LeaderLeaseTimeout: 500 * time.Millisecond,
		CommitTimeout:      50 * time.Millisecond,
		SnapshotThreshold:  8192,
		SnapshotInterval:   2 * time.Minute,
		TrailingLogs:       10240,
		SnapshotRetain:     2,
		MaxPool:            3,
		IOTimeout:          10 * time.Second,
		MembershipTimeout:  10 * time.Second,
	}
}

// Profile names a set of raft timers.
type Profile string

// The profiles.
const (
	ProfileLAN  Profile = "lan"  // DefaultConfig: 1 s timers
	ProfileFast Profile = "fast" // fastConfig: 500 ms timers, one machine, tests
)

// ProfileConfig is the configuration of a profile (ProfileLAN for "").
func ProfileConfig(p Profile) (Config, error) {
	switch p {
	case ProfileLAN, "":
		return DefaultConfig(), nil
	case ProfileFast:
		return fastConfig(), nil
	}
	return Config{}, fmt.Errorf("%w: profile %q is unknown; use %q or %q", ErrConfig, p, ProfileLAN, ProfileFast)
}

// TestConfig returns timers in milliseconds for in-process clusters (the
// ProfileFast configuration).
func TestConfig() Config { return fastConfig() }

func fastConfig() Config {
	c := DefaultConfig()
	// Short, yet long enough for a loaded machine under the race
	// detector: at 50 ms a pre-vote and vote round (RPCs, the fsync of
	// the term) outlived the election timer again and again, no leader
	// was elected for many seconds, and a leader that missed its quorum
	// for 25 ms stepped down.
	c.HeartbeatTimeout = 500 * time.Millisecond
	c.ElectionTimeout = 500 * time.Millisecond
	c.LeaderLeaseTimeout = 500 * time.Millisecond
	c.CommitTimeout = 5 * time.Millisecond
	c.SnapshotInterval = 50 * time.Millisecond
	c.SnapshotThreshold = 1024
	c.TrailingLogs = 128
	c.IOTimeout = time.Second
	c.MembershipTimeout = 5 * time.Second
	return c
}

// Validate checks the Config. Errors wrap ErrConfig and name the field.
func (c Config) Validate() error {
	bad := func(field, why string) error { return fmt.Errorf("%w: %s: %s", ErrConfig, field, why) }
	if c.ID == "" {
		return bad("ID", "required (the node name)")
	}
	custom := c.LogStore != nil || c.StableStore != nil || c.SnapshotStore != nil
	if custom && (c.LogStore == nil || c.StableStore == nil || c.SnapshotStore == nil) {
		return bad("LogStore", "LogStore, StableStore and SnapshotStore are set together")
	}
	if !custom && !c.InMemory && c.Dir == "" {
		return bad("Dir", "required unless InMemory")
	}
	if c.Transport == nil {
		if c.BindAddr == "" {
			return bad("BindAddr", "required unless a Transport is injected")
		}
		if _, _, err := net.SplitHostPort(c.BindAddr); err != nil {
			return bad("BindAddr", err.Error())
		}
		if c.AdvertiseAddr != "" {
			if err := checkAdvertise(c.AdvertiseAddr); err != nil {
				return bad("AdvertiseAddr", err.Error())
			}
		}
	}
	if c.MaxPool < 1 {
		return bad("MaxPool", "must be at least 1")
	}
	if c.IOTimeout <= 0 || c.MembershipTimeout <= 0 {
		return bad("IOTimeout", "IOTimeout and MembershipTimeout must be positive")
	}
	if c.SnapshotRetain < 1 {
		return bad("SnapshotRetain", "must be at least 1")
	}
	if c.StaleAfter < 0 {
		return bad("StaleAfter", "must not be negative")
	}
	if err := raft.ValidateConfig(c.raftConfig()); err != nil {
		return bad("timers", err.Error())
	}
	return nil
}

// staleAfter is StaleAfter or its default.
// clock is the store's clock: Clock, or the real one.
func (c Config) clock() clock.Clock {
	if c.Clock == nil {
		return clock.Real{}
	}
	return c.Clock
}

func (c Config) staleAfter() time.Duration {
	if c.StaleAfter > 0 {
		return c.StaleAfter
	}
	return 3 * c.HeartbeatTimeout
}

// raftConfig maps the Config onto raft's (without the logger).
func (c Config) raftConfig() *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(c.ID)
	rc.HeartbeatTimeout = c.HeartbeatTimeout
	rc.ElectionTimeout = c.ElectionTimeout
	rc.LeaderLeaseTimeout = c.LeaderLeaseTimeout
	rc.CommitTimeout = c.CommitTimeout
	rc.SnapshotThreshold = c.SnapshotThreshold
	rc.SnapshotInterval = c.SnapshotInterval
	rc.TrailingLogs = c.TrailingLogs
	// A removed server stays up as a reader until its node decides.
	rc.ShutdownOnRemove = false
	return rc
}

// checkAdvertise refuses addresses other servers cannot dial.
func checkAdvertise(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if port == "" || port == "0" {
		return fmt.Errorf("%q has no port", addr)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return fmt.Errorf("%q is not advertisable (unspecified address)", addr)
	}
	if host == "" {
		return fmt.Errorf("%q has no host", addr)
	}
	return nil
}
