package node

import "github.com/harn-dev/harn/node/sessions"

// candidate is a session a handle may name.
type candidate struct {
	id, name string
	ended    bool
}

// pickHandle returns the id of the one candidate that handle names
// (sessions.PickHandle).
func pickHandle(handle string, cands []candidate) (string, error) {
	cs := make([]sessions.Candidate, len(cands))
	for i, c := range cands {
		cs[i] = sessions.Candidate{ID: c.id, Name: c.name, Ended: c.ended}
	}
	return sessions.PickHandle(handle, cs)
}
