package main

import (
	"strings"
	"testing"

	"github.com/harn-dev/harn/cli/hook"
)

// TestBadWebFlagsAreUsageErrors: both board tokens at once, a
// non-positive timeout, a stream or connection cap under 1, and a bound of
// harn's own agent out of its range refuse the start, exit 2, before the
// node opens anything.
func TestBadWebFlagsAreUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--http-token", "0123456789abcdef0", "--http-token-file", dir + "/t"}, "--http-token-file"},
		{[]string{"--http-read-timeout", "0s"}, "--http-read-timeout"},
		{[]string{"--http-write-timeout", "-1s"}, "--http-write-timeout"},
		{[]string{"--http-idle-timeout", "0s"}, "--http-idle-timeout"},
		{[]string{"--http-max-streams", "0"}, "--http-max-streams"},
		{[]string{"--http-max-client-streams", "0"}, "--http-max-client-streams"},
		{[]string{"--http-max-peer-conns", "0"}, "--http-max-peer-conns"},
		{[]string{"--agent.max-answer-bytes", "0"}, "--agent.max-answer-bytes"},
		{[]string{"--agent.max-answer-bytes", "67108865"}, "--agent.max-answer-bytes"},
		{[]string{"--agent.max-tool-calls", "4097"}, "--agent.max-tool-calls"},
		{[]string{"--agent.max-steps", "-1"}, "--agent.max-steps"},
		{[]string{"--agent.tool-preview-bytes", "255"}, "--agent.tool-preview-bytes"},
		{[]string{"--http-public-url", "ftp://board.example/"}, "--http-public-url"},
		{[]string{"--http-public-url", "https://user:pw@board.example/"}, "--http-public-url"},
		{[]string{"--http-public-url", "https://board.example/?token=x"}, "--http-public-url"},
	} {
		args := append([]string{"node", "--data-dir", dir + "/data", "--socket", dir + "/s", "--no-mesh"}, c.args...)
		code, stderr := runMain(t, args...)
		if code != hook.ExitUsage || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want exit %d, one line naming %s", c.args, code, stderr, hook.ExitUsage, c.want)
		}
	}
}
