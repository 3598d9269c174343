package tasksvc

import (
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/gossip"
)

// Brief is the roster's view of a session's harn task, nil without one.
func (s *Service) Brief(session string) *api.HarnTask {
	if s == nil || s.Tasks == nil {
		return nil
	}
	b, ok := s.Tasks.Brief(session)
	if !ok {
		return nil
	}
	return gossip.BoundedTask(&api.HarnTask{Id: b.ID, State: b.State, Status: b.Status, Text: b.Text,
		QueueDepth: int32(min(b.QueueDepth, 1<<30)), PendingCalls: b.PendingCalls})
}

// Decorate adds the harn task and the hosted view to a gossiped entry.
func (s *Service) Decorate(e *gossip.Entry) {
	if s == nil {
		return
	}
	if t := s.Brief(e.GetSessionId()); t != nil {
		e.HarnTask = t
		e.Hash = gossip.WithTask(e.Hash, t)
	}
	if e.SessionRow != nil && s.Hosted != nil {
		st := e.SessionRow.State()
		if v := s.Hosted.View(&st); v != nil {
			e.Hosted = gossip.BoundedHosted(v)
			e.Hash = gossip.WithHosted(e.Hash, e.Hosted)
		}
	}
}
