package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/harn-dev/harn/util/text"
)

// humanTime renders t for people: the local time to the second and its
// age ("2026-08-12 12:02:00 (3m ago)"), or "-".
func humanTime(now, t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return "-"
	}
	return t.In(loc).Format("2006-01-02 15:04:05") + " (" + text.Ago(now, t) + ")"
}

// detailView is how show, status and whoami print a session for people.
// Every string from the session passes util/text first.
type detailView struct {
	now  time.Time
	loc  *time.Location
	full bool // show: start, events, cwd and claims too
}

func (v detailView) write(w io.Writer, r *rosterRow) error {
	var b strings.Builder
	line := func(label, value string) { fmt.Fprintf(&b, "  %-11s %s\n", label+":", value) }
	name := safe(r.SessionName)
	if name == "" {
		name = safe(r.Name)
	}
	fmt.Fprintf(&b, "%s  %s\n", safe(r.SessionId), dash(name))

	act := safe(r.Activity)
	if r.silent() {
		act += " · silent " + text.Age(v.now, r.silentSince())
	}
	line("activity", fmt.Sprintf("%s since %s, from %s", act, humanTime(v.now, r.activityAt(), v.loc), dash(safe(r.ActivitySource))))
	if on := safe(r.WaitingOn); on != "" || r.WaitingChild != "" {
		s := dash(on)
		if r.WaitingChild != "" {
			s += " (subagent " + safe(r.WaitingChild) + ")"
		}
		line("waiting on", s)
	}
	if r.silent() {
		line("silent", "no evidence since "+humanTime(v.now, r.silentSince(), v.loc))
	}
	life := safe(r.TaskState)
	if reason := safe(r.BlockerReason); reason != "" {
		life += ": " + reason
	}
	line("task state", fmt.Sprintf("%s since %s", life, humanTime(v.now, r.taskStateAt(), v.loc)))
	line("task", dash(safe(r.Task)))
	if r.HarnTask != nil {
		ht := harnTaskMarker(r.HarnTask)
		if t := safe(r.HarnTask.Text); t != "" {
			ht += ": " + t
		}
		line("harn task", strings.TrimPrefix(ht, "▶ "))
	}
	if p := safe(r.project()); p != "" {
		line("project", p)
	}
	agent := fmt.Sprintf("%s on %s", dash(safe(r.Agent)), dash(safe(r.Node)))
	if r.AgentPid > 0 {
		agent += fmt.Sprintf(" (pid %d)", r.AgentPid)
	}
	if !r.Reachable {
		agent += ", unreachable since " + humanTime(v.now, r.unreachableSince(), v.loc)
	}
	line("agent", agent)
	if r.ParentSessionId != "" {
		line("parent", safe(r.ParentSessionId))
	}
	if h := r.GetHosted(); h != nil {
		where := "a terminal of " + dash(safe(r.Node))
		if h.Worktree != "" {
			where += ", worktree " + safe(h.Worktree) + " (branch " + dash(safe(h.Branch)) + ")"
		}
		line("hosted", fmt.Sprintf("%s; %d attached, %d follow-ups held", where, h.Attached, h.Queued))
		for _, l := range h.Peek {
			line("screen", safe(l))
		}
	}
	line("last", humanTime(v.now, r.evidenceAt(), v.loc))
	if r.Ended {
		line("ended", fmt.Sprintf("%s (%s)", humanTime(v.now, r.endedAt(), v.loc), dash(safe(r.EndReason))))
	}
	if v.full {
		line("started", fmt.Sprintf("%s, %d events", humanTime(v.now, r.startedAt(), v.loc), r.Events))
		if r.Cwd != "" {
			line("cwd", safe(r.Cwd))
		}
		for _, c := range r.Claims {
			line("claim", safe(c))
		}
		for _, c := range r.PendingClaims {
			line("claim", safe(c)+" (pending: not recorded yet, does not hold)")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
