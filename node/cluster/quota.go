package cluster

import (
	"context"
	"fmt"
	"strconv"

	"github.com/harn-dev/harn/raftstore"
	"github.com/harn-dev/harn/util/text"
)

// The registry's admission of this node's sessions (raftstore/owners.go):
// a session id another node holds, or a session over the mesh's quota, is
// refused here, at the writing node, before it reaches the leader, with a
// log line and a diagnostic (`harn node errors`, source "registry") that
// say why, and the node's other sessions are written as usual. When this
// node's replica lags behind the leader and admits a session the leader
// then refuses, the leader's status names the refused sessions
// (api.ReasonSessionsRefused), and they are told of the same way.

// writeRefused is told of each of this node's sessions the registry
// refuses (once per session and reason).
func (c *Cluster) writeRefused(session string, err error) {
	msg := fmt.Sprintf("registry: session %s is not written to the mesh's registry: %s",
		text.Clip(text.OneLine(session), 80), text.OneLine(err.Error()))
	c.local.Diagnose("registry", msg)
}

// sessionQuota is the quota this server writes into the registry.
func (f follower) sessionQuota() int {
	c := f.c
	if c.cfg.SessionQuota > 0 {
		return c.cfg.SessionQuota
	}
	return raftstore.DefaultSessionQuota
}

// syncSessionQuota, on the leader, writes its --session-quota into the
// registry when the registry holds another (or none while it is not the
// default), so that every replica enforces the same quota.
func (f follower) syncSessionQuota() {
	c := f.c
	if c.store == nil || !c.store.IsLeader() {
		return
	}
	want := f.sessionQuota()
	e, ok := c.store.KVGet(raftstore.SessionQuotaKey)
	if ok {
		if n, valid := raftstore.ParseSessionQuota(e.Value); valid && n == want {
			return
		}
	} else if want == raftstore.DefaultSessionQuota {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.ForwardTimeout)
	defer cancel()
	if _, err := c.Apply(ctx, raftstore.KVCommand(raftstore.KVOp{Key: raftstore.SessionQuotaKey, Value: []byte(strconv.Itoa(want))})); err != nil {
		c.log.Warn("write the session quota into the registry", "quota", want, "err", err)
		return
	}
	c.log.Info("session quota set in the registry", "quota", want)
}
