package node

import (
	"errors"
	"fmt"
)

// RemoteSessionError: a handle this node does not know names a session
// that the mesh (the registry, else the gossiped roster) places on
// another node. It is an ErrUnknownSession (NotFound, the CLI's exit 3)
// whose text names the owner, so that the operator knows where to run
// the command.
type RemoteSessionError struct {
	Handle  string
	Session string
	Owner   string
}

func (e *RemoteSessionError) Error() string {
	return fmt.Sprintf("session %s is on node %s; run it there", e.Session, e.Owner)
}

// Unwrap keeps errors.Is(err, ErrUnknownSession).
func (e *RemoteSessionError) Unwrap() error { return ErrUnknownSession }

// ownerErr turns an unknown-session err for handle into a
// RemoteSessionError when the mesh knows the session on another node;
// any other err is returned as it is.
func (n *Node) ownerErr(handle string, err error) error {
	var re *RemoteSessionError
	if handle == "" || !errors.Is(err, ErrUnknownSession) || errors.As(err, &re) {
		return err
	}
	if id, owner, ok := n.remoteOwner(handle); ok {
		return &RemoteSessionError{Handle: handle, Session: id, Owner: owner}
	}
	return err
}

// remoteOwner finds the session handle names on another node: in the
// registry's records, else in what other nodes gossip.
func (n *Node) remoteOwner(handle string) (id, owner string, ok bool) {
	if n.cl != nil {
		if rec, err := n.resolveRecord(handle); err == nil && rec.Node != "" && rec.Node != n.cfg.Name {
			return rec.SessionID, rec.Node, true
		}
	}
	if n.remote == nil {
		return "", "", false
	}
	all := n.remote.All()
	cands := make([]candidate, 0, len(all))
	owners := make(map[string]string, len(all))
	for _, e := range all {
		if e.Node == n.cfg.Name || e.Entry.SessionRow == nil {
			continue
		}
		row := e.Entry.SessionRow
		cands = append(cands, candidate{id: row.GetSessionId(), name: row.GetName(), ended: row.GetEnded()})
		owners[row.GetSessionId()] = e.Node
	}
	got, err := pickHandle(handle, cands)
	if err != nil {
		return "", "", false
	}
	return got, owners[got], true
}
