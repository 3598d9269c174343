package node

import (
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/roster"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/presence"
)

// newRoster builds the roster room (node/roster) on this node's rooms,
// read as they open (rosterHost).
func (n *Node) newRoster() *roster.Roster {
	return roster.New(roster.Config{Name: n.cfg.Name, Clock: n.cfg.Clock, SilenceAfter: n.cfg.SilenceAfter,
		OwnerReadTimeout: n.cfg.Cluster.OwnerReadTimeout, OwnerTraceTimeout: n.cfg.Cluster.OwnerTraceTimeout,
		PeerContextBytes: n.cfg.PeerContextBytes, Logger: n.log}, rosterHost{n}, n.remote)
}

// rosterHost hands the roster the node's rooms; each is nil until it
// opens (and the mesh's without the mesh).
type rosterHost struct{ n *Node }

func (h rosterHost) Sessions() roster.Sessions {
	if h.n.sess == nil {
		return nil
	}
	return h.n.sess
}

func (h rosterHost) Mesh() roster.Mesh {
	if h.n.cl == nil {
		return nil
	}
	return h.n.cl
}

func (h rosterHost) Registry() roster.Registry {
	if h.n.cl == nil {
		return nil
	}
	return h.n.cl.Registry()
}

func (h rosterHost) Ledger() roster.Ledger                         { return h.n.ledger }
func (h rosterHost) Settle(session string)                         { h.n.seen.Settle(session) }
func (h rosterHost) HarnTask(session string) *api.HarnTask         { return h.n.taskSvc.Brief(session) }
func (h rosterHost) HostedView(st *presence.State) *api.HostedView { return h.n.hosts.View(st) }
func (h rosterHost) Tasks() *tasks.Host                            { return h.n.tasks }

// wireApprovals makes each answer to a permission request a recorded
// event (tasks.AnswerEvent).
func (n *Node) wireApprovals() {
	n.tasks.Approvals().OnAnswer(n.recordAnswer)
}

// recordAnswer records r's answer and tells the notifications at once.
func (n *Node) recordAnswer(r tasks.Request) {
	if r.Session == "" {
		return
	}
	// Only a session this node holds: an answer never makes up a session.
	st, err := n.sess.Resolve(r.Session)
	if err != nil || st.SessionID != r.Session {
		n.log.Warn("a permission answer for a session this node does not hold was not recorded", "request", r.ID, "session", r.Session)
		return
	}
	if _, err := n.Ingest([]presence.Event{tasks.AnswerEvent(r, n.cfg.Clock.Now(), st.LastEventAt)}); err != nil {
		n.log.Warn("recording a permission answer", "request", r.ID, "session", r.Session, "err", err)
		return
	}
	n.alerts.Resolved()
}
