package cli

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/harn-dev/harn/node"
)

// addRegistryAuthFlags adds the flags of the registry's write authority,
// read on the servers that check forwarded writes.
func addRegistryAuthFlags(f *pflag.FlagSet) {
	f.String("notify-admins", "", "nodes, beside servers, that may add and remove the mesh's webhooks: NODE,... (read on servers)")
	f.Int("session-quota", node.DefaultSessionQuota, "live sessions one node may hold in the registry (the leader's value holds for the mesh)")
}

func registryAuthConfig(f *pflag.FlagSet, cc *node.ClusterConfig) error {
	s, _ := f.GetString("notify-admins")
	admins, err := node.ParseNotifyAdmins(s)
	if err != nil {
		return usageErr(err)
	}
	cc.NotifyAdmins = admins
	q, _ := f.GetInt("session-quota")
	if q < 1 {
		return usageErr(fmt.Errorf("--session-quota %d: give at least 1 (default %d)", q, node.DefaultSessionQuota))
	}
	cc.SessionQuota = q
	return nil
}
