package node

import (
	"fmt"
	"log/slog"

	"github.com/harn-dev/harn/node/remotepolicy"
)

// remotePolicy is the node's policy for callers on other nodes: the
// configured profiles and workspaces, with the node's name, its own
// provider, and its private paths (the data dir, the secret files), each
// resolved.
func remotePolicy(cfg Config, log *slog.Logger) remotepolicy.Config {
	p := cfg.Remote
	p.Node = cfg.Name
	p.ProviderKind, p.ProviderURL, p.Models = cfg.Provider.Kind, cfg.Provider.URL, cfg.Provider.Models
	p.Private = []string{remotepolicy.Resolve(cfg.DataDir)}
	for _, f := range cfg.SecretFiles {
		if f != "" {
			p.Private = append(p.Private, remotepolicy.Resolve(f))
		}
	}
	if held := p.Holding(); len(held) > 0 {
		log.Warn(fmt.Sprintf("workspaces %v hold the data dir or a secret file: a task from another node may not work at them, only in a directory beside it", held))
	}
	return p
}

// RemotePolicy is what a caller on another node may choose here.
func (n *Node) RemotePolicy() remotepolicy.Config { return n.remotePol }
