package node

import (
	"errors"
	"testing"
)

func TestParseNotifyAdmins(t *testing.T) {
	got, err := ParseNotifyAdmins(" desk , laptop")
	if err != nil || len(got) != 2 || got[0] != "desk" || got[1] != "laptop" {
		t.Fatalf("%v %v", got, err)
	}
	if got, err := ParseNotifyAdmins(""); err != nil || len(got) != 0 {
		t.Fatalf("empty: %v %v", got, err)
	}
	for _, bad := range []string{"a,,b", "a b", ",", "\x1b[2J"} {
		if _, err := ParseNotifyAdmins(bad); !errors.Is(err, ErrConfig) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
