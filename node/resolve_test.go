package node

import (
	"errors"
	"strings"
	"testing"
)

func TestHandleIsIDPrefixOrNameWithOrWithoutAgent(t *testing.T) {
	cands := []candidate{{id: "01abc", name: "Flint"}, {id: "01abd", name: "Opal"}, {id: "02xyz", name: "Flint", ended: true}}
	for handle, want := range map[string]string{
		"01abc": "01abc", "02": "02xyz", "Flint": "01abc", "flint": "01abc",
		"Agent Flint": "01abc", "agent opal": "01abd", "  Agent  Opal ": "01abd",
	} {
		got, err := pickHandle(handle, cands)
		if err != nil || got != want {
			t.Errorf("%q: got %q %v, want %q", handle, got, err, want)
		}
	}
}

func TestAmbiguousHandleListsCandidates(t *testing.T) {
	cands := []candidate{{id: "01abc", name: "A"}, {id: "01abd", name: "B"}}
	_, err := pickHandle("01ab", cands)
	if !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), "01abc") || !strings.Contains(err.Error(), "01abd") {
		t.Fatalf("err %v", err)
	}
	_, err = pickHandle("nosuch", cands)
	if !errors.Is(err, ErrUnknownSession) {
		t.Fatalf("err %v", err)
	}
}

func TestShowAcceptsTheSessionName(t *testing.T) {
	n := openNode(t, testConfig(t, t.TempDir()))
	mustIngest(t, n, ev("sess-1", "1", "session.start", 1, nil))
	st, _ := n.Resolve("sess-1")
	for _, h := range []string{st.Name, strings.ToLower(st.Name), "Agent " + st.Name} {
		e, _, err := n.ReadSession(t.Context(), h)
		if err != nil || e.State.SessionID != "sess-1" {
			t.Errorf("%q: %v %v", h, e.State.SessionID, err)
		}
	}
}
