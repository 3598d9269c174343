package raftstore

import (
	"errors"
	"fmt"
)

// Errors. Every error this package returns wraps one of them (test with
// errors.Is).
var (
	// ErrNotLeader: the call needs the leader and this store is not it.
	// The error is a *NotLeaderError that names the leader when one is
	// known.
	ErrNotLeader = errors.New("not the raft leader")
	// ErrNoLeader: no leader is known (an election is running, or this
	// store is cut off from a quorum). Retry later.
	ErrNoLeader = errors.New("no raft leader")
	// ErrConfig: the Config or an argument is unusable.
	ErrConfig = errors.New("raftstore config")
	// ErrClosed: the store is closed, or was never opened.
	ErrClosed = errors.New("raftstore is closed")
	// ErrInvalidCommand: a command failed validation; nothing was written.
	ErrInvalidCommand = errors.New("invalid registry command")
	// ErrUnsupportedVersion: a log entry or snapshot of another format
	// version.
	ErrUnsupportedVersion = errors.New("unsupported registry format version")
	// ErrUnknownOutcome: the write was handed to raft but its fate is not
	// known (leadership was lost or the context ended before it
	// committed). It may still be applied; retrying an upsert is safe,
	// since upserts are idempotent.
	ErrUnknownOutcome = errors.New("registry write outcome unknown")
	// ErrUnknownServer: the raft configuration holds no server of that ID.
	ErrUnknownServer = errors.New("not a server of the raft configuration")
)

// NotLeaderError is returned by leader-only calls on another store. It
// wraps ErrNotLeader, and ErrNoLeader as well when no leader is known.
type NotLeaderError struct {
	LeaderID   string
	LeaderAddr string
}

func (e *NotLeaderError) Error() string {
	if e.LeaderID == "" {
		return "not the raft leader, and no leader is known"
	}
	return fmt.Sprintf("not the raft leader; the leader is %s at %s", e.LeaderID, e.LeaderAddr)
}

// Unwrap returns ErrNotLeader, and ErrNoLeader when no leader is known.
func (e *NotLeaderError) Unwrap() []error {
	if e.LeaderID == "" {
		return []error{ErrNotLeader, ErrNoLeader}
	}
	return []error{ErrNotLeader}
}
