package cli

import (
	"github.com/spf13/pflag"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/layout"
)

// addRegistryAuthFlags adds the flags of the registry's write authority,
// read on the servers that check forwarded writes.
func addRegistryAuthFlags(f *pflag.FlagSet) {
	f.String("notify-admins", "", "nodes, beside servers, that may add and remove the mesh's webhooks: NODE,... (read on servers)")
	f.Int("session-quota", layout.DefaultSessionQuota, "live sessions one node may hold in the registry (the leader's value holds for the mesh)")
}

// isWriteRefused reports whether st is the registry's write authority
// refusing a write (api.ReasonWriteRefused).
func isWriteRefused(st *status.Status) bool {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.Reason == api.ReasonWriteRefused {
			return true
		}
	}
	return false
}
