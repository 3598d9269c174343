package runtime

import (
	"slices"
	"sort"
)

// Handoff is everything a successor receives from the runtime: the
// conversation up to its submission point, its predecessor's final
// user-visible message, and the redacted digest. Nothing else: no
// reasoning, tool traffic, ledger, provider bindings or capability context.
type Handoff struct {
	Conversation     []Message `json:"conversation"`
	PredecessorFinal string    `json:"predecessor_final,omitempty"`
	Digest           *Digest   `json:"digest,omitempty"`
}

// Digest is the redacted control-plane digest of a predecessor: call
// counts, terminal status, and the names of the capabilities it called
// that the successor may discover, with their counts.
type Digest struct {
	Predecessor  string            `json:"predecessor"`
	Status       Status            `json:"status"`
	Calls        CallCounts        `json:"calls"`
	Capabilities []CapabilityCalls `json:"capabilities"`
}

// CapabilityCalls counts the started calls of one capability.
type CapabilityCalls struct {
	Name  string `json:"name"`
	Calls int    `json:"calls"`
}

func (h *Handoff) clone() Handoff {
	if h == nil {
		return Handoff{Conversation: []Message{}}
	}
	c := *h
	c.Conversation = slices.Clone(h.Conversation)
	if h.Digest != nil {
		d := *h.Digest
		d.Capabilities = slices.Clone(h.Digest.Capabilities)
		c.Digest = &d
	}
	return c
}

// handoffFor builds a starting task's handoff; t's snapshot and grants are
// set. A queued or superseding successor gets its predecessor's final
// message and digest; a task started in an idle session gets the
// conversation only.
func (rt *Runtime) handoffFor(s *session, t *task, g *global) *Handoff {
	h := &Handoff{Conversation: s.convUntil(t.submitted)}
	p := t.pred
	if p == nil {
		return h
	}
	h.PredecessorFinal = p.final
	d := &Digest{Predecessor: p.id, Status: p.status, Calls: p.counts, Capabilities: []CapabilityCalls{}}
	may := discoverable(g, t)
	for name, n := range p.perCap {
		ok := false
		if _, found := slices.BinarySearch(may, name); found {
			ok = true
		} else if c, in := t.snap.lookup(name); in && !g.isRevoked(name) && !g.isOff(c.Provider) {
			// a name under a pattern entry (mcp__*) of the successor's catalog
			lvl, _ := ceiling(t.grants, t.limits, &c, "", modeNoCall, s.cfg.Workdir)
			ok = lvl >= Discover
		}
		if ok {
			d.Capabilities = append(d.Capabilities, CapabilityCalls{Name: name, Calls: n})
		}
	}
	sort.Slice(d.Capabilities, func(i, j int) bool { return d.Capabilities[i].Name < d.Capabilities[j].Name })
	h.Digest = d
	return h
}

// Digest returns the handoff a task received when it started (`harn task
// digest ID`); a task that has not started has none yet.
func (rt *Runtime) Digest(taskID string) (Handoff, error) {
	t, err := rt.lock(taskID)
	if err != nil {
		return Handoff{}, err
	}
	defer t.s.mu.Unlock()
	if t.handoff == nil {
		return Handoff{}, ErrTaskNotRunning
	}
	return t.handoff.clone(), nil
}
