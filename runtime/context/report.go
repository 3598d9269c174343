package context

import (
	"github.com/harn-dev/harn/runtime/agent"
	"github.com/harn-dev/harn/util/text"
)

// Report is what `harn context` shows of a session's context.
type Report struct {
	Session     string           `json:"session"`
	Lane        string           `json:"lane"`
	Budget      BudgetLine       `json:"budget"`
	Items       []ItemView       `json:"items"`
	Checkpoints []CheckpointView `json:"checkpoints"`
}

// BudgetLine is the working set against the usable input budget.
type BudgetLine struct {
	Usable    int `json:"usable_tokens"` // as the last request stated it (0: no request yet)
	Used      int `json:"used_tokens"`
	Admission int `json:"admission_tokens"` // 80%
	Target    int `json:"target_tokens"`    // 60%
}

// ItemView is one history item of the lane.
type ItemView struct {
	Seq    uint64 `json:"seq"`
	Kind   string `json:"kind"`
	Role   string `json:"role,omitempty"`
	State  string `json:"state"`
	Tokens int    `json:"tokens"`
	Ref    string `json:"ref,omitempty"`
	Bytes  int    `json:"bytes,omitempty"`
	CallID string `json:"call_id,omitempty"`
	Task   string `json:"task,omitempty"`
	Text   string `json:"text,omitempty"` // clipped; untrusted
}

// CheckpointView is one checkpoint of the lane.
type CheckpointView struct {
	Seq      uint64 `json:"seq"`
	Method   string `json:"method"`
	From     uint64 `json:"from"`
	To       uint64 `json:"to"`
	Retained int    `json:"retained"`
	Before   int    `json:"before_tokens"`
	After    int    `json:"after_tokens"`
	Note     string `json:"note,omitempty"`
}

const reportTextBytes = 160

// Report describes the lane: every item with its state, the checkpoints
// and the budget line.
func (c *Lane) Report() Report {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	l := c.l
	r := Report{Session: c.session, Lane: l.name, Items: []ItemView{}, Checkpoints: []CheckpointView{}}
	b := l.budget
	r.Budget = BudgetLine{Usable: b, Used: c.usedLocked(), Admission: b * admitPct / 100, Target: b * targetPct / 100}
	retained := map[uint64]bool{}
	var to uint64
	if l.ckpt != nil {
		to = l.ckpt.rec.Ckpt.To
		for _, s := range l.ckpt.rec.Ckpt.Retained {
			retained[s] = true
		}
	}
	if l.instr != nil {
		r.Items = append(r.Items, ItemView{Seq: l.instr.rec.Seq, Kind: KindInstructions, State: StatePinned,
			Tokens: l.instr.tokens, Text: text.Clip(text.OneLine(l.instr.rec.Text), reportTextBytes)})
	}
	for _, it := range l.msgs {
		m := it.rec.Msg
		v := ItemView{Seq: it.rec.Seq, Kind: KindMessage, Role: m.Role, Tokens: it.tokens, CallID: m.CallID, Task: m.Task,
			Text: text.Clip(text.OneLine(m.Text), reportTextBytes)}
		if m.Role == agent.RoleTool {
			v.Ref, v.Bytes = refOf(it.rec.Seq), it.rec.Size
		}
		if len(m.Calls) > 0 && v.Text == "" {
			v.Text = text.Clip("calls "+m.Calls[0].Name+" "+text.OneLine(string(m.Calls[0].Args)), reportTextBytes)
		}
		switch {
		case l.ckpt == nil || it.rec.Seq > to:
			v.State = StateActive
		case retained[it.rec.Seq]:
			v.State = StateRetained
		default:
			v.State = StateArchived
		}
		if it.rec.Pinned && v.State != StateArchived {
			v.State = StatePinned
		}
		r.Items = append(r.Items, v)
	}
	for _, it := range c.checkpointsLocked() {
		cp := it.rec.Ckpt
		r.Checkpoints = append(r.Checkpoints, CheckpointView{Seq: it.rec.Seq, Method: cp.Method, From: cp.From, To: cp.To,
			Retained: len(cp.Retained), Before: cp.Before, After: cp.After, Note: cp.Note})
	}
	return r
}

// checkpointsLocked are the lane's checkpoints, oldest first (those a fork
// inherited included).
func (c *Lane) checkpointsLocked() []*item {
	var out []*item
	for seq := uint64(1); seq <= c.l.tree.seq; seq++ {
		it := c.l.tree.items[seq]
		if it != nil && it.rec.Kind == KindCheckpoint && (it.rec.Lane == c.l.name || it == c.l.ckpt) {
			out = append(out, it)
		}
	}
	return out
}
