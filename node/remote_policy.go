package node

import (
	"fmt"

	"github.com/harn-dev/harn/node/remotepolicy"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/util/text"
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

// hostSessions is what the policy reads of the task host.
type hostSessions struct{ h *tasks.Host }

func (s hostSessions) Workdir(handle string) (string, bool)        { return s.h.LoopWorkdir(handle) }
func (s hostSessions) Head(handle string) string                   { return s.h.HeadTask(handle) }
func (s hostSessions) SessionOf(task string) (string, bool)        { return s.h.SessionOfTask(task) }
func (s hostSessions) Grants(task string) ([]runtime.Grant, error) { return s.h.TaskGrants(task) }
func (s hostSessions) SessionGrants(handle string) ([]runtime.Grant, bool) {
	return s.h.HeldGrants(handle)
}

// admitRemote applies the node's remotepolicy to an admitted caller's
// action, and fills in what the caller may not choose. Every refusal is
// logged here, at the target.
func (n *Node) admitRemote(id trust.Identity, a *tasks.Action) error {
	h := n.tasks
	if h == nil {
		return nil
	}
	p := n.RemotePolicy()
	if err := p.Admit(hostSessions{h}, a); err != nil {
		n.log.Warn("remote task action refused", "op", a.Op, "caller", id.String(), "err", text.Clip(text.OneLine(err.Error()), 300))
		return err
	}
	return nil
}
