package daemon

import (
	"github.com/spf13/pflag"

	"github.com/harn-dev/harn/node/layout"
)

// addRegistryAuthFlags adds the flags of the registry's write authority,
// read on the servers that check forwarded writes.
func addRegistryAuthFlags(f *pflag.FlagSet) {
	f.String("notify-admins", "", "nodes, beside servers, that may add and remove the mesh's webhooks: NODE,... (read on servers)")
	f.Int("session-quota", layout.DefaultSessionQuota, "live sessions one node may hold in the registry (the leader's value holds for the mesh)")
}
