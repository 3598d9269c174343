package node

import (
	"errors"
	"strings"
	"testing"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/gossip"
	"github.com/harn-dev/harn/node/roster"
	"github.com/harn-dev/harn/presence"
)

// TestLifecycleOfAnotherNodesSessionNamesTheOwner: a handle this node
// does not know, that another node gossips, is refused as an unknown
// session whose text names the owner; a handle nobody knows stays the
// plain unknown-session error.
func TestLifecycleOfAnotherNodesSessionNamesTheOwner(t *testing.T) {
	n := openNode(t, testConfig(t, t.TempDir()))
	n.remote.Apply("nodeC", 1, gossip.Entry{SessionRow: &api.SessionRow{SessionId: "remote-sess-1", Name: "Quartz"}})
	for _, h := range []string{"remote-sess-1", "remote-s", "Quartz"} {
		_, err := n.decl.Lifecycle(t.Context(), h, presence.TaskBlocked, "waiting")
		err = n.roster.OwnerErr(h, err)
		var re *roster.RemoteSessionError
		if !errors.Is(err, ErrUnknownSession) || !errors.As(err, &re) || re.Owner != "nodeC" ||
			!strings.Contains(err.Error(), "session remote-sess-1 is on node nodeC; run it there") {
			t.Errorf("%q: %v", h, err)
		}
	}
	_, err := n.decl.Lifecycle(t.Context(), "nosuch", presence.TaskBlocked, "waiting")
	var re *roster.RemoteSessionError
	if err = n.roster.OwnerErr("nosuch", err); !errors.Is(err, ErrUnknownSession) || errors.As(err, &re) {
		t.Errorf("an unknown handle: %v", err)
	}
}
