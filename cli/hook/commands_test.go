package hook

import (
	"bytes"
	"strings"
	"testing"
)

// TestHookTreeIsTheHookAlone: harn-hook, which links this package and not
// cli, runs `hook` and `version` and refuses every other command of harn's
// with a usage error naming the fix.
func TestHookTreeIsTheHookAlone(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"hook", "--help"}, strings.NewReader(""), &out, &errb); code != ExitOK || !strings.Contains(out.String(), "hook JSON on stdin") {
		t.Fatalf("hook --help: exit %d\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := Main([]string{"version"}, strings.NewReader(""), &out, &errb); code != ExitOK || !strings.HasPrefix(out.String(), "harn ") {
		t.Fatalf("version: exit %d\n%s%s", code, out.String(), errb.String())
	}
	for _, cmd := range []string{"agents", "node", "ask"} {
		errb.Reset()
		if code := Main([]string{cmd}, strings.NewReader(""), &out, &errb); code != ExitUsage || !strings.Contains(errb.String(), "unknown command") {
			t.Errorf("%s: exit %d, want %d: %s", cmd, code, ExitUsage, errb.String())
		}
	}
}
