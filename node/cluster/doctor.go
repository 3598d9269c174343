package cluster

import (
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/meshtrust"
	"github.com/harn-dev/harn/node/trust"
)

// TLSView is this node's mesh TLS state for `harn doctor`.
func (c *Cluster) TLSView() *api.DoctorTLS {
	if c.trust == nil {
		return &api.DoctorTLS{Mode: "plaintext"}
	}
	v := &api.DoctorTLS{Mode: "mesh-ca"}
	if meshtrust.LoneCA(c.trust.Dir()) {
		v.Mode = "lone-ca"
	}
	if leaf := c.trust.Holder().Leaf(); leaf != nil {
		v.Subject = leaf.Subject.CommonName
		v.Fingerprint = trust.FingerprintOf(leaf).String()
		v.NotAfter = api.NewTime(leaf.NotAfter)
	}
	if st := c.trust.CAStatus(); len(st.Roots) > 0 {
		v.Ca = st.Roots[0]
	}
	return v
}

// GossipEncrypted reports whether the mesh's gossip runs under a key.
func (c *Cluster) GossipEncrypted() bool {
	if c.mesh == nil {
		return false
	}
	primary, _, err := c.mesh.Keys()
	return err == nil && len(primary) > 0
}
