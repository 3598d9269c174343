package tasks

// Brief is a session's task as the roster shows it (`harn_task`): the
// head task (running, cancelling, quiescing or blocked), else the task
// that ended last.
type Brief struct {
	ID           string   `json:"id"`
	State        string   `json:"state"`
	Status       string   `json:"status,omitempty"`
	Text         string   `json:"text,omitempty"`
	QueueDepth   int      `json:"queue_depth"`
	PendingCalls []string `json:"pending_calls,omitempty"`
}

// maxBriefCalls bounds the pending calls a brief lists.
const maxBriefCalls = 4

// briefHash is a comparable summary of a brief, to tell changes.
type briefHash struct {
	id, state, status string
	depth, pending    int
}

func (b Brief) hash() briefHash {
	return briefHash{id: b.ID, state: b.State, status: b.Status, depth: b.QueueDepth, pending: len(b.PendingCalls)}
}

// Brief returns a hosted session's task view, if it has a task.
func (h *Host) Brief(session string) (Brief, bool) {
	if h.lookup(session) == nil {
		return Brief{}, false
	}
	sv, err := h.rt.Session(session)
	if err != nil {
		return Brief{}, false
	}
	v := sv.Task
	if v == nil && len(sv.Queue) > 0 {
		v = &sv.Queue[0]
	}
	if v == nil {
		v = sv.Last
	}
	if v == nil {
		return Brief{}, false
	}
	b := Brief{ID: v.ID, State: string(v.State), Status: string(v.Status), Text: h.text(v.ID), QueueDepth: sv.QueueDepth}
	if n := len(v.PendingCalls); n > 0 {
		b.PendingCalls = append([]string(nil), v.PendingCalls[:min(n, maxBriefCalls)]...)
	}
	return b, true
}

// SessionOfTask returns the session of a task of this node.
func (h *Host) SessionOfTask(task string) (string, bool) {
	v, err := h.rt.Task(task)
	if err != nil {
		return "", false
	}
	return v.Session, true
}
