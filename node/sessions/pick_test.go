package sessions

import (
	"errors"
	"strings"
	"testing"
)

func TestHandleIsIDPrefixOrNameWithOrWithoutAgent(t *testing.T) {
	cands := []Candidate{{ID: "01abc", Name: "Flint"}, {ID: "01abd", Name: "Opal"}, {ID: "02xyz", Name: "Flint", Ended: true}}
	for handle, want := range map[string]string{
		"01abc": "01abc", "02": "02xyz", "Flint": "01abc", "flint": "01abc",
		"Agent Flint": "01abc", "agent opal": "01abd", "  Agent  Opal ": "01abd",
	} {
		got, err := PickHandle(handle, cands)
		if err != nil || got != want {
			t.Errorf("%q: got %q %v, want %q", handle, got, err, want)
		}
	}
}

func TestAmbiguousHandleListsCandidates(t *testing.T) {
	cands := []Candidate{{ID: "01abc", Name: "A"}, {ID: "01abd", Name: "B"}}
	_, err := PickHandle("01ab", cands)
	if !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), "01abc") || !strings.Contains(err.Error(), "01abd") {
		t.Fatalf("err %v", err)
	}
	_, err = PickHandle("nosuch", cands)
	if !errors.Is(err, ErrUnknownSession) {
		t.Fatalf("err %v", err)
	}
}
