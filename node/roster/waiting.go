package roster

import (
	"sort"

	"github.com/harn-dev/harn/node/tasks"
)

// Facts adds the session's facts to a waiting request: its name, project
// and branch, and its cwd when the call named none (what the operator
// approving it needs to know, on every surface). Only a session this
// node holds has them here.
func (ro *Roster) Facts(r *tasks.Request) {
	if r.Session == "" {
		return
	}
	st, err := ro.resolveLocal(r.Session)
	if err != nil || st.SessionID != r.Session {
		return
	}
	r.Name, r.Project, r.Branch = st.Name, st.Project(), st.Branch
	if r.Cwd == "" {
		r.Cwd = st.Cwd
	}
}

// WaitingOf lists h's calls that wait for an operator: the open
// permission requests and the task confirmations, oldest first; facts
// adds a confirmation's session facts (a permission request has them
// from its start). A nil h has none.
func WaitingOf(h *tasks.Host, facts func(*tasks.Request)) []tasks.Request {
	if h == nil {
		return nil
	}
	out := h.Approvals().List()
	for _, r := range h.Confirmations() {
		if facts != nil {
			facts(&r)
		}
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Opened.Before(out[j].Opened) })
	return out
}

// Waiting are this node's calls that wait for an operator, each with its
// session's facts (WaitingOf).
func (ro *Roster) Waiting() []tasks.Request { return WaitingOf(ro.host.Tasks(), ro.Facts) }
