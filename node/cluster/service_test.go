package cluster

import (
	"errors"
	"slices"
	"testing"

	"github.com/harn-dev/harn/raftstore"
)

// TestForwardedRefusalNamesTheRefusedSessions: the leader's status for a
// write applied in part carries the refused session ids, and the writing
// node's copy of the refusal names them (its replica may lag behind the
// leader, so it cannot tell them itself).
func TestForwardedRefusalNamesTheRefusedSessions(t *testing.T) {
	cause := errors.Join(
		&raftstore.SessionQuotaError{Node: "n1", Quota: 2, SessionIDs: []string{"q3", "q4"}},
		&raftstore.SessionTakenError{SessionID: "v", Owner: "n2", Writer: "n1"})
	code, ok := admissionCode(cause)
	if !ok {
		t.Fatal("not an admission refusal")
	}
	got := finalApplyErr(admissionStatus(code, cause))
	if !errors.Is(got, raftstore.ErrSessionTaken) && !errors.Is(got, raftstore.ErrSessionQuota) {
		t.Fatalf("the forwarded refusal wraps neither sentinel: %v", got)
	}
	ids := make([]string, 0, 3)
	for id := range raftstore.RefusedSessions(got) {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"q3", "q4", "v"}) {
		t.Fatalf("refused sessions %v", ids)
	}
}
