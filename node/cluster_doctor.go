package node

import (
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/trust"
)

// tlsView is this node's mesh TLS state for `harn doctor`.
func (c *cluster) tlsView() *api.DoctorTLS {
	if c.trust == nil {
		return &api.DoctorTLS{Mode: "plaintext"}
	}
	v := &api.DoctorTLS{Mode: "mesh-ca"}
	if loneCA(c.trust.dir) {
		v.Mode = "lone-ca"
	}
	if leaf := c.trust.holder.Leaf(); leaf != nil {
		v.Subject = leaf.Subject.CommonName
		v.Fingerprint = trust.FingerprintOf(leaf).String()
		v.NotAfter = api.NewTime(leaf.NotAfter)
	}
	if st := c.caStatus(); len(st.Roots) > 0 {
		v.Ca = st.Roots[0]
	}
	return v
}

// gossipEncrypted reports whether the mesh's gossip runs under a key.
func (c *cluster) gossipEncrypted() bool {
	if c.mesh == nil {
		return false
	}
	primary, _, err := c.mesh.Keys()
	return err == nil && len(primary) > 0
}
