package node

import (
	"context"
	"fmt"
	"strconv"

	"google.golang.org/grpc/codes"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/apigrpc"
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

// ReasonWriteRefused is the ErrorInfo reason of a registry write the
// leader's write authority refused (the caller's node may not make it).
const ReasonWriteRefused = api.ReasonWriteRefused

// writeRefusedStatus is the local API's status for a write refused by mesh
// trust: PermissionDenied with ReasonWriteRefused, so that a client tells
// it from a refused remote control without reading the text.
func writeRefusedStatus(err error) error {
	return apigrpc.WithReason(codes.PermissionDenied, ReasonWriteRefused, err.Error())
}

// DefaultSessionQuota is the live sessions one node may hold in the
// registry unless the servers set another --session-quota.
const DefaultSessionQuota = raftstore.DefaultSessionQuota

// writeRefused is told of each of this node's sessions the registry
// refuses (once per session and reason).
func (c *cluster) writeRefused(session string, err error) {
	msg := fmt.Sprintf("registry: session %s is not written to the mesh's registry: %s",
		text.Clip(text.OneLine(session), 80), text.OneLine(err.Error()))
	c.local.diagnose("registry", msg, 0, "")
}

// sessionQuota is the quota this server writes into the registry.
func (c *cluster) sessionQuota() int {
	if c.cfg.SessionQuota > 0 {
		return c.cfg.SessionQuota
	}
	return raftstore.DefaultSessionQuota
}

// syncSessionQuota, on the leader, writes its --session-quota into the
// registry when the registry holds another (or none while it is not the
// default), so that every replica enforces the same quota.
func (c *cluster) syncSessionQuota() {
	if c.store == nil || !c.store.IsLeader() {
		return
	}
	want := c.sessionQuota()
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
	if _, err := c.applyCommand(ctx, raftstore.KVCommand(raftstore.KVOp{Key: raftstore.SessionQuotaKey, Value: []byte(strconv.Itoa(want))})); err != nil {
		c.log.Warn("write the session quota into the registry", "quota", want, "err", err)
		return
	}
	c.log.Info("session quota set in the registry", "quota", want)
}
