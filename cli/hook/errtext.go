package hook

import (
	"strings"

	"github.com/harn-dev/harn/util/text"
)

// pkgPrefixes are the names of harn's own packages, which prefix their
// errors the Go way ("tasks: …"). A person reading `harn: …` needs what
// went wrong and the fix, not the package that said it.
var pkgPrefixes = map[string]bool{
	"adapter": true, "alerts": true, "api": true, "board": true, "changes": true, "claims": true,
	"cli": true, "exec": true, "forward": true, "gossip": true, "heartbeat": true, "hookkit": true,
	"ledger": true, "mesh": true, "metrics": true, "node": true, "notify": true, "presence": true,
	"raftstore": true, "registry": true, "remint": true, "runtime": true, "spool": true,
	"tasks": true, "tracing": true, "trust": true, "agent": true, "tools": true,
}

// userText is the one line a failed command prints after "harn: ": the
// error's first line with harn's own package prefixes taken off the front.
func UserText(err error) string {
	s := text.FirstLine(err.Error())
	for {
		name, rest, ok := strings.Cut(s, ": ")
		if !ok || !pkgPrefixes[name] || rest == "" {
			return s
		}
		s = rest
	}
}
