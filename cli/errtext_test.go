package cli

import (
	"errors"
	"fmt"
	"testing"
)

func TestErrorsDropPackagePrefixes(t *testing.T) {
	base := errors.New("runtime: no such task t-1")
	cases := map[error]string{
		base:                                  "no such task t-1",
		fmt.Errorf("tasks: %w", base):         "no such task t-1",
		fmt.Errorf("cli: tasks: x\nmore"):     "x",
		errors.New("session s1: unknown"):     "session s1: unknown",
		errors.New("tasks: "):                 "tasks:",
		errors.New("dial unix /x: no socket"): "dial unix /x: no socket",
	}
	for err, want := range cases {
		if got := userText(err); got != want {
			t.Errorf("userText(%q) = %q, want %q", err, got, want)
		}
	}
}
