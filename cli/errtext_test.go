package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/harn-dev/harn/cli/hook"
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
		if got := hook.UserText(err); got != want {
			t.Errorf("userText(%q) = %q, want %q", err, got, want)
		}
	}
}

// A wrong count of arguments is a usage error (exit 2) naming the
// command's help, and that help runs as printed.
func TestAWrongArgumentCountIsAUsageErrorNamingItsHelp(t *testing.T) {
	for _, args := range [][]string{{"ask"}, {"ask", "a", "b"}, {"task", "show"}, {"context"}} {
		var out, errb bytes.Buffer
		code := Main(args, strings.NewReader(""), &out, &errb)
		msg := errb.String()
		if code != hook.ExitUsage || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "--help` for its arguments") {
			t.Errorf("harn %v: exit %d, %q", args, code, msg)
			continue
		}
		i := strings.Index(msg, "run `")
		helpArgs := strings.Fields(strings.TrimPrefix(msg[i+len("run `"):strings.LastIndex(msg, "`")], "harn "))
		var hout bytes.Buffer
		if c := Main(helpArgs, strings.NewReader(""), &hout, io.Discard); c != hook.ExitOK || !strings.Contains(hout.String(), "Usage:") {
			t.Errorf("the hint `harn %v` exits %d: %q", helpArgs, c, hout.String())
		}
	}
}
