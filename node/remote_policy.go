package node

import (
	"fmt"

	"github.com/harn-dev/harn/node/remotepolicy"
)

// remotePolicy is the node's policy for callers on other nodes: the
// configured profiles and workspaces, with the node's name, its own
// provider, and its private paths (the data dir, the secret files), each
// resolved.
func (n *Node) remotePolicy() remotepolicy.Config {
	p := n.cfg.Remote
	p.Node = n.cfg.Name
	p.ProviderKind, p.ProviderURL, p.Models = n.cfg.Provider.Kind, n.cfg.Provider.URL, n.cfg.Provider.Models
	p.Private = []string{remotepolicy.Resolve(n.cfg.DataDir)}
	for _, f := range n.cfg.SecretFiles {
		if f != "" {
			p.Private = append(p.Private, remotepolicy.Resolve(f))
		}
	}
	if held := p.Holding(); len(held) > 0 {
		n.log.Warn(fmt.Sprintf("workspaces %v hold the data dir or a secret file: a task from another node may not work at them, only in a directory beside it", held))
	}
	return p
}

// RemotePolicy is what a caller on another node may choose here.
func (n *Node) RemotePolicy() remotepolicy.Config { return n.remotePol }
