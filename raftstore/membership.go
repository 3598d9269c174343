package raftstore

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// Files under Config.Dir.
const (
	boltFile     = "raft.db"
	logCacheSize = 512
)

// openStores opens the log, stable and snapshot stores (called by Open
// with s.mu held).
func (s *Store) openStores(hl hclog.Logger) error {
	switch {
	case s.cfg.LogStore != nil:
		s.logs, s.stable, s.snaps = s.cfg.LogStore, s.cfg.StableStore, s.cfg.SnapshotStore
	case s.cfg.InMemory:
		mem := raft.NewInmemStore()
		s.logs, s.stable, s.snaps = mem, mem, NewMemSnapshotStore(s.cfg.SnapshotRetain)
	default:
		if err := os.MkdirAll(s.cfg.Dir, 0o700); err != nil {
			return fmt.Errorf("raft dir: %w", err)
		}
		bolt, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(s.cfg.Dir, boltFile), NoSync: s.cfg.NoSync})
		if err != nil {
			return fmt.Errorf("open raft log %s: %w", filepath.Join(s.cfg.Dir, boltFile), err)
		}
		s.owned = append(s.owned, bolt)
		snaps, err := raft.NewFileSnapshotStoreWithLogger(s.cfg.Dir, s.cfg.SnapshotRetain, hl.Named("snapshot"))
		if err != nil {
			return fmt.Errorf("open raft snapshots in %s: %w", s.cfg.Dir, err)
		}
		cache, err := raft.NewLogCache(logCacheSize, bolt)
		if err != nil {
			return fmt.Errorf("raft log cache: %w", err)
		}
		s.logs, s.stable, s.snaps = cache, bolt, snaps
	}
	return nil
}

// Stats describes this store's raft state.
type Stats struct {
	ID         string `json:"id"`
	State      string `json:"state"` // Leader, Follower, Candidate, Shutdown
	LeaderID   string `json:"leader_id"`
	LeaderAddr string `json:"leader_addr"`
	Term       uint64 `json:"term"`
	LastIndex  uint64 `json:"last_index"`
	// CommitIndex is the index this store knows to be committed.
	CommitIndex uint64 `json:"commit_index"`
	// AppliedIndex is the index the local registry reflects.
	AppliedIndex  uint64   `json:"applied_index"`
	SnapshotIndex uint64   `json:"snapshot_index"`
	Sessions      int      `json:"sessions"`
	Read          ReadInfo `json:"read"`
	Servers       []Server `json:"servers"`
}

// Stats returns this store's raft state and the configuration it knows.
func (s *Store) Stats() Stats {
	st := Stats{ID: s.cfg.ID, State: raft.Shutdown.String(), Sessions: s.reg.Len(),
		AppliedIndex: s.fsm.appliedIndex(), Read: s.Staleness()}
	r, err := s.running()
	if err != nil {
		return st
	}
	st.State = r.State().String()
	addr, id := r.LeaderWithID()
	st.LeaderID, st.LeaderAddr = string(id), string(addr)
	st.Term, st.LastIndex, st.CommitIndex = r.CurrentTerm(), r.LastIndex(), r.CommitIndex()
	st.SnapshotIndex, _ = strconv.ParseUint(r.Stats()["last_snapshot_index"], 10, 64)
	if conf, err := s.configuration(r); err == nil {
		for _, sv := range conf.Servers {
			st.Servers = append(st.Servers, Server{ID: string(sv.ID), Addr: string(sv.Address), Voter: sv.Suffrage == raft.Voter})
		}
	}
	return st
}

func (s *Store) configuration(r *raft.Raft) (raft.Configuration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.MembershipTimeout)
	defer cancel()
	f := r.GetConfiguration()
	if err := s.wait(ctx, f); err != nil {
		return raft.Configuration{}, err
	}
	return f.Configuration(), nil
}

// Servers returns the raft configuration this store knows.
func (s *Store) Servers() ([]Server, error) {
	r, err := s.running()
	if err != nil {
		return nil, err
	}
	conf, err := s.configuration(r)
	if err != nil {
		return nil, fmt.Errorf("read raft configuration: %w", err)
	}
	out := make([]Server, 0, len(conf.Servers))
	for _, sv := range conf.Servers {
		out = append(out, Server{ID: string(sv.ID), Addr: string(sv.Address), Voter: sv.Suffrage == raft.Voter})
	}
	return out, nil
}

// AddVoter adds (or promotes) a voting server. Leader only. Adding a
// server that is already a voter at addr does nothing.
func (s *Store) AddVoter(id, addr string) error {
	return s.changeMembership("add_voter", id, addr, func(r *raft.Raft, conf raft.Configuration) raft.IndexFuture {
		if has(conf, id, addr, raft.Voter) {
			return nil
		}
		return r.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, s.cfg.MembershipTimeout)
	})
}

// AddNonvoter adds a non-voting replica that receives the log and serves
// stale reads. Leader only. A voter is not demoted by it (see DemoteVoter).
func (s *Store) AddNonvoter(id, addr string) error {
	return s.changeMembership("add_nonvoter", id, addr, func(r *raft.Raft, conf raft.Configuration) raft.IndexFuture {
		if has(conf, id, addr, raft.Nonvoter) || has(conf, id, addr, raft.Voter) {
			return nil
		}
		return r.AddNonvoter(raft.ServerID(id), raft.ServerAddress(addr), 0, s.cfg.MembershipTimeout)
	})
}

// DemoteVoter makes a voter a non-voter. Leader only.
func (s *Store) DemoteVoter(id string) error {
	return s.changeMembership("demote", id, "", func(r *raft.Raft, conf raft.Configuration) raft.IndexFuture {
		if !has(conf, id, "", raft.Voter) {
			return nil
		}
		return r.DemoteVoter(raft.ServerID(id), 0, s.cfg.MembershipTimeout)
	})
}

// RemoveServer removes a server from the configuration. Leader only.
// Removing an unknown id does nothing.
func (s *Store) RemoveServer(id string) error {
	return s.changeMembership("remove", id, "", func(r *raft.Raft, conf raft.Configuration) raft.IndexFuture {
		if !has(conf, id, "", raft.Voter) && !has(conf, id, "", raft.Nonvoter) {
			return nil
		}
		return r.RemoveServer(raft.ServerID(id), 0, s.cfg.MembershipTimeout)
	})
}

// has reports whether conf holds id with suffrage (and addr, unless "").
func has(conf raft.Configuration, id, addr string, suffrage raft.ServerSuffrage) bool {
	for _, sv := range conf.Servers {
		if string(sv.ID) == id && sv.Suffrage == suffrage && (addr == "" || string(sv.Address) == addr) {
			return true
		}
	}
	return false
}

func (s *Store) changeMembership(op, id, addr string, change func(*raft.Raft, raft.Configuration) raft.IndexFuture) error {
	if id == "" {
		return fmt.Errorf("%w: %s: server id required", ErrConfig, op)
	}
	r, err := s.running()
	if err != nil {
		return err
	}
	if r.State() != raft.Leader {
		return s.notLeader(r)
	}
	conf, err := s.configuration(r)
	if err != nil {
		return s.readErr(r, err)
	}
	f := change(r, conf)
	if f == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*s.cfg.MembershipTimeout)
	defer cancel()
	if err := s.wait(ctx, f); err != nil {
		return fmt.Errorf("%s %s: %w", op, id, s.mapErr(r, err))
	}
	s.log.Info("raft membership changed", slog.String("op", op), slog.String("server_id", id), slog.String(keyAddr, addr))
	return nil
}

// MoveServer puts a server of the configuration at a new address, keeping
// its ID and suffrage (raft's AddVoter or AddNonvoter of a known ID
// replaces its address). Leader only. A server already at addr is left
// alone; an ID the configuration does not hold is ErrUnknownServer.
func (s *Store) MoveServer(id, addr string) error {
	if addr == "" {
		return fmt.Errorf("%w: move: address required", ErrConfig)
	}
	var unknown bool
	err := s.changeMembership("move", id, addr, func(r *raft.Raft, conf raft.Configuration) raft.IndexFuture {
		for _, sv := range conf.Servers {
			if string(sv.ID) != id {
				continue
			}
			switch {
			case string(sv.Address) == addr:
				return nil
			case sv.Suffrage == raft.Voter:
				return r.AddVoter(sv.ID, raft.ServerAddress(addr), 0, s.cfg.MembershipTimeout)
			default:
				return r.AddNonvoter(sv.ID, raft.ServerAddress(addr), 0, s.cfg.MembershipTimeout)
			}
		}
		unknown = true
		return nil
	})
	if err == nil && unknown {
		return fmt.Errorf("%w: %s", ErrUnknownServer, id)
	}
	return err
}
