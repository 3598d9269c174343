package node

import (
	"strings"
	"testing"
)

func TestShowAcceptsTheSessionName(t *testing.T) {
	n := openNode(t, testConfig(t, t.TempDir()))
	mustIngest(t, n, ev("sess-1", "1", "session.start", 1, nil))
	st, _ := n.Resolve("sess-1")
	for _, h := range []string{st.Name, strings.ToLower(st.Name), "Agent " + st.Name} {
		e, _, err := n.roster.ReadSession(t.Context(), h)
		if err != nil || e.State().SessionID != "sess-1" {
			t.Errorf("%q: %v %v", h, e.State().SessionID, err)
		}
	}
}
