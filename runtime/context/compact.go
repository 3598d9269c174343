package context

import (
	stdctx "context"
	"errors"
	"fmt"
	"strings"

	"github.com/harn-dev/harn/runtime/agent"
	"github.com/harn-dev/harn/util/text"
)

// Compaction methods.
const (
	MethodLLM      = "llm"      // a validated condensation of completed work
	MethodFallback = "fallback" // completed tool exchanges archived oldest first, their references kept
	MethodRolling  = "rolling"  // last resort: user messages and pins collapsed into one bounded summary
	MethodRecovery = "recovery" // the provider refused the request as too long: only the current turn kept
)

// Admission: compaction starts at admitPct of the budget and targets targetPct.
const (
	admitPct  = 80
	targetPct = 60
	stallPct  = 5
	// line and entry bounds of a summary
	maxLineBytes   = 240
	maxRolledBytes = 400
)

type unitKind int

const (
	uUser     unitKind = iota // a prompt, a steer or a pin
	uWork                     // an assistant answer without tool calls
	uExchange                 // an assistant's tool calls and their results
)

type unit struct {
	kind   unitKind
	items  []*item
	tokens int
}

// units groups the working set: a tool result goes with the call it answers.
func units(view []*item) []unit {
	var out []unit
	for i, it := range view {
		m := it.rec.Msg
		switch {
		case m.Role == agent.RoleTool && len(out) > 0 && out[len(out)-1].kind == uExchange:
			u := &out[len(out)-1]
			u.items = view[i-len(u.items) : i+1 : i+1] // contiguous in the view: no copy
			u.tokens += it.tokens
		case m.Role == agent.RoleUser:
			out = append(out, unit{kind: uUser, items: view[i : i+1 : i+1], tokens: it.tokens})
		case m.Role == agent.RoleAssistant && len(m.Calls) == 0:
			out = append(out, unit{kind: uWork, items: view[i : i+1 : i+1], tokens: it.tokens})
		default:
			out = append(out, unit{kind: uExchange, items: view[i : i+1 : i+1], tokens: it.tokens})
		}
	}
	return out
}

// plan is a compaction to be: which units leave the working set.
type plan struct {
	before   int
	budget   int
	target   int
	units    []unit
	archive  []bool
	rolling  bool
	prev     *Checkpoint
	from, to uint64
}

func summaryCap(budget int) int { return max(128, budget/8) }

// planLocked chooses, deterministically, what to archive to reach target:
// completed tool exchanges oldest first, then answers oldest first; the
// newest unit stays; with rolling, user messages and pins last. keepFrom
// protects units from that index on (recovery: none; -1: only the newest).
func (c *Lane) planLocked(budget, target int, rolling bool, before []bool) plan {
	view := c.viewLocked()
	p := plan{before: c.usedLocked(), budget: budget, target: target, units: units(view)}
	if c.l.ckpt != nil {
		p.prev = c.l.ckpt.rec.Ckpt
		p.from = p.prev.From
	} else if len(c.l.msgs) > 0 {
		p.from = c.l.msgs[0].rec.Seq
	}
	if n := len(c.l.msgs); n > 0 {
		p.to = c.l.msgs[n-1].rec.Seq
	}
	p.archive = make([]bool, len(p.units))
	last := len(p.units) - 1
	need := p.before - target
	for i := range p.units { // recovery: everything before the current turn goes
		if i < len(before) && before[i] && i != last {
			p.archive[i] = true
			need -= p.units[i].tokens - lineTokens
		}
	}
	for _, k := range []unitKind{uExchange, uWork} {
		for i := 0; i < last && need > 0; i++ {
			if p.units[i].kind == k && !p.archive[i] {
				p.archive[i] = true
				need -= p.units[i].tokens - lineTokens
			}
		}
	}
	if need > 0 && rolling {
		for i := 0; i < last; i++ {
			if !p.archive[i] {
				p.archive[i], p.rolling = true, true
			}
		}
	}
	return p
}

// lineTokens is about what one reference line costs in the summary.
const lineTokens = 48

func (p *plan) any() bool {
	for _, a := range p.archive {
		if a {
			return true
		}
	}
	return false
}

// checkpoint builds the checkpoint of a plan; head is a condensation
// (empty: the previous one is kept).
func (c *Lane) checkpoint(p plan, method, head, note string) *Checkpoint {
	cp := &Checkpoint{Method: method, From: p.from, To: p.to, Before: p.before, Note: note}
	if p.prev != nil {
		cp.Head, cp.Dropped = p.prev.Head, p.prev.Dropped
		cp.Lines = append(cp.Lines, p.prev.Lines...)
	}
	if head != "" {
		cp.Head = head
	}
	var rolled []string
	var fresh []unit // archived exchanges and answers, oldest first
	for i, u := range p.units {
		if !p.archive[i] {
			for _, it := range u.items {
				cp.Retained = append(cp.Retained, it.rec.Seq)
			}
			continue
		}
		if u.kind == uUser {
			m := u.items[0].rec.Msg
			label := fmt.Sprintf("[msg:%x]", u.items[0].rec.Seq)
			if u.items[0].rec.Pinned {
				label = fmt.Sprintf("[pin:%x]", u.items[0].rec.Seq)
			}
			rolled = append(rolled, label+" "+text.Clip(text.OneLine(m.Text), maxRolledBytes))
			continue
		}
		fresh = append(fresh, u)
	}
	if len(rolled) > 0 {
		prefix := ""
		if cp.Head != "" {
			prefix = cp.Head + "\n"
		}
		if !strings.Contains(prefix, "Earlier requests") {
			prefix += "Earlier requests (collapsed, oldest first):\n"
		}
		cp.Head = prefix + strings.Join(rolled, "\n")
	}
	// Bound the summary: the oldest reference lines go first, then the
	// oldest of the rolling summary; the history keeps them all. The new
	// lines' tokens were counted when their items were applied: only the
	// lines kept are written.
	limit := summaryCap(p.budget)
	total := len(cp.Lines) + len(fresh)
	sum := agent.Tokens(renderSummary(0, &Checkpoint{Head: cp.Head, Dropped: cp.Dropped + total}))
	keepFresh, keepPrev := 0, 0
	for i := len(fresh) - 1; i >= 0; i-- { // the newest lines that fit, counted line by line
		_, n := unitLine(fresh[i])
		if sum+n+1 > limit {
			break
		}
		sum += n + 1
		keepFresh++
	}
	if keepFresh == len(fresh) {
		for i := len(cp.Lines) - 1; i >= 0; i-- {
			n := agent.Tokens(cp.Lines[i]) + 1
			if sum+n > limit {
				break
			}
			sum += n
			keepPrev++
		}
	}
	cp.Dropped += total - keepFresh - keepPrev
	lines := make([]string, 0, keepPrev+keepFresh)
	lines = append(lines, cp.Lines[len(cp.Lines)-keepPrev:]...)
	for _, u := range fresh[len(fresh)-keepFresh:] {
		l, _ := unitLine(u)
		lines = append(lines, l)
	}
	cp.Lines = lines
	for len(cp.Lines) > 0 && agent.Tokens(renderSummary(0, cp)) > limit { // the exact count, a few lines at most
		cp.Lines, cp.Dropped = cp.Lines[1:], cp.Dropped+1
	}
	for cp.Head != "" && agent.Tokens(renderSummary(0, cp)) > limit {
		i := strings.IndexByte(cp.Head, '\n')
		if i < 0 {
			cp.Head = text.Clip(cp.Head, limit)
			break
		}
		cp.Head = cp.Head[i+1:]
	}
	return cp
}

// unitLine is the reference line of an archived exchange or answer and
// its tokens: the one its last item cached when applied, else made now.
func unitLine(u unit) (string, int) {
	last := u.items[len(u.items)-1]
	if last.line != "" && last.lineFrom == u.items[0].rec.Seq && last.lineN == len(u.items) {
		return last.line, last.lineTok
	}
	l := makeLine(u)
	return l, agent.Tokens(l)
}

func makeLine(u unit) string {
	if u.kind == uWork {
		t := u.items[0].rec.Msg.Text
		return fmt.Sprintf("- [%x] answer: %s", u.items[0].rec.Seq, text.Clip(text.OneLine(t[:min(len(t), lineArgBytes)]), maxLineBytes))
	}
	return exchangeLine(u)
}

// cacheLine makes the reference line of the unit that the lane's newest
// message ends, as units would group it, and caches it on that message.
func (l *lane) cacheLine() {
	n := len(l.msgs)
	last := l.msgs[n-1]
	m := last.rec.Msg
	u := unit{kind: uExchange}
	switch {
	case m.Role == agent.RoleUser:
		return
	case m.Role == agent.RoleAssistant && len(m.Calls) == 0:
		u = unit{kind: uWork, items: []*item{last}}
	case m.Role == agent.RoleTool:
		u.items = l.msgs[l.unitStart(n-1):]
	default:
		u.items = []*item{last}
	}
	last.line = makeLine(u)
	last.lineTok = agent.Tokens(last.line)
	last.lineFrom, last.lineN = u.items[0].rec.Seq, len(u.items)
}

// unitStart is the index of the first item of the exchange that the tool
// result at index i ends: the one before it keeps its unit's start, so
// that appending the results of a step with many calls is linear, not a
// walk back over every result already there.
func (l *lane) unitStart(i int) int {
	if i > 0 {
		if p := l.msgs[i-1]; p.rec.Msg.Role == agent.RoleTool && p.lineN > 0 {
			if j := i - p.lineN; j >= 0 && l.msgs[j].rec.Seq == p.lineFrom {
				return j
			}
		}
	}
	j := i
	for j > 0 && l.msgs[j-1].rec.Msg.Role == agent.RoleTool {
		j--
	}
	if j > 0 {
		if p := l.msgs[j-1].rec.Msg; p.Role == agent.RoleAssistant && len(p.Calls) > 0 {
			j--
		}
	}
	return j
}

// lineCap is where a reference line stops being written: past it the
// line is clipped to maxLineBytes+128 runes anyway (a rune is at most 4
// bytes), so what follows never shows and a line costs the same for an
// exchange of 2 items or 20,000.
const lineCap = 4*(maxLineBytes+128) + 4

// lineArgBytes bounds how much of a call's arguments a line reads.
const lineArgBytes = 4 << 10

func exchangeLine(u unit) string {
	var b strings.Builder
	m := u.items[0].rec.Msg
	fmt.Fprintf(&b, "- [%x]", u.items[0].rec.Seq)
	for _, call := range m.Calls {
		if b.Len() > lineCap {
			break
		}
		args := call.Args[:min(len(call.Args), lineArgBytes)]
		fmt.Fprintf(&b, " %s %s", text.Clip(call.Name, 64), text.Clip(text.OneLine(string(args)), 96))
	}
	for _, it := range u.items[1:] {
		if b.Len() > lineCap {
			break
		}
		status := "ok"
		if it.rec.Msg.IsError {
			status = "error"
		}
		fmt.Fprintf(&b, " → %s %s (%d bytes)", refOf(it.rec.Seq), status, it.rec.Size)
	}
	return text.Clip(b.String(), maxLineBytes+128)
}

// tokensAfter is the working set's tokens once cp is in effect.
func (c *Lane) tokensAfter(cp *Checkpoint) int {
	n := agent.MessageTokens(summaryMessage(0, cp))
	if c.l.instr != nil && c.l.instr.rec.Text != "" {
		n += c.l.instr.tokens
	}
	for _, seq := range cp.Retained {
		if it := c.l.tree.items[seq]; it != nil {
			n += it.tokens
		}
	}
	return n
}

// storeLocked appends a checkpoint and returns its canonical record.
func (c *Lane) storeLocked(cp *Checkpoint, archived int) (Compaction, error) {
	cp.After = c.tokensAfter(cp)
	its, err := c.s.appendLocked(c.l.tree, []itemRec{{Lane: c.l.name, Kind: KindCheckpoint, Ckpt: cp}}, true)
	if err != nil {
		return Compaction{}, err
	}
	return Compaction{Session: c.session, Lane: c.l.name, Checkpoint: its[0].rec.Seq, Method: cp.Method,
		Before: cp.Before, After: cp.After, Budget: c.l.budget, Archived: archived, Note: cp.Note}, nil
}

func archivedItems(p plan) int {
	n := 0
	for i, a := range p.archive {
		if a {
			n += len(p.units[i].items)
		}
	}
	return n
}

func stalled(before, after int) bool { return before-after < before*stallPct/100 }

// admit compacts the working set when it reaches the admission line.
func (c *Lane) admit(ctx stdctx.Context, _ string, budget int) {
	s := c.s
	s.mu.Lock()
	if budget > 0 && budget != c.l.budget {
		if _, err := s.appendLocked(c.l.tree, []itemRec{{Lane: c.l.name, Kind: KindBudget, Budget: budget}}, false); err != nil {
			s.log.Warn("context: budget not stored", "session", c.session, "err", err)
		}
	}
	used := c.usedLocked()
	cond := c.condenser()
	llm := cond != nil
	over := budget > 0 && used > budget
	if budget <= 0 || (!over && (!llm || used*100 < budget*admitPct)) {
		s.mu.Unlock()
		return
	}
	target := budget * targetPct / 100
	note := ""
	if llm {
		p := c.planLocked(budget, target, false, nil)
		rev := c.l.rev
		if p.any() {
			s.mu.Unlock()
			head, err := c.condense(ctx, cond, p)
			s.mu.Lock()
			switch {
			case err != nil:
				note = err.Error()
			case c.l.rev != rev:
				note = "the history moved during the condensation"
			default:
				cp := c.checkpoint(p, MethodLLM, head, "")
				if after := c.tokensAfter(cp); stalled(p.before, after) {
					note = fmt.Sprintf("stall: the condensation cut %d of %d tokens (under %d%%)", p.before-after, p.before, stallPct)
					break
				}
				ev, err := c.storeLocked(cp, archivedItems(p))
				s.mu.Unlock()
				c.emit(ev, err)
				return
			}
		} else {
			note = "nothing completed to condense"
		}
	}
	ev, err, ok := c.fallbackLocked(budget, target, note, nil)
	s.mu.Unlock()
	if ok {
		c.emit(ev, err)
	}
}

// fallbackLocked runs the deterministic checkpoint: exchanges, then
// answers, then, when that still leaves the set over the budget itself
// (the last resort), the rolling summary. A recovery (before
// set) archives the units before the current turn and never rolls the
// turn's own prompts.
func (c *Lane) fallbackLocked(budget, target int, note string, before []bool) (Compaction, error, bool) {
	method := MethodFallback
	if before != nil {
		method = MethodRecovery
	}
	p := c.planLocked(budget, target, false, before)
	cp := c.checkpoint(p, method, "", note)
	if after := c.tokensAfter(cp); before == nil && (after > budget || (!p.any() && p.before > budget)) {
		if r := c.planLocked(budget, target, true, before); r.rolling {
			p = r
			if method == MethodFallback {
				method = MethodRolling
			}
			cp = c.checkpoint(p, method, "", note)
		}
	}
	if !p.any() {
		return Compaction{}, nil, false
	}
	ev, err := c.storeLocked(cp, archivedItems(p))
	return ev, err, true
}

func (c *Lane) emit(ev Compaction, err error) {
	if err != nil {
		c.s.log.Warn("context: checkpoint not stored", "session", c.session, "err", err)
		return
	}
	c.lastMu.Lock()
	c.lastMethod, c.lastAt = ev.Method, c.s.opts.Clock.Now()
	c.lastMu.Unlock()
	c.s.log.Info("context compacted", "session", ev.Session, "method", ev.Method, "before", ev.Before, "after", ev.After, "note", ev.Note)
	if c.s.opts.OnCompact != nil {
		c.s.opts.OnCompact(ev)
	}
}

// Recover is told that the provider refused the request as over its
// window: a recovery checkpoint keeps the current turn (from the task's
// first message) and archives what came before; when the turn alone is
// still over the target, its older completed exchanges go too. It reports
// whether anything changed (the loop then retries once).
func (c *Lane) Recover(task string) bool {
	s := c.s
	s.mu.Lock()
	budget := c.l.budget
	if budget <= 0 {
		budget = c.usedLocked()
	}
	us := units(c.viewLocked())
	before := make([]bool, len(us))
	for i, u := range us {
		if u.kind == uUser && u.items[0].rec.Msg.Task == task {
			break
		}
		before[i] = true
	}
	ev, err, ok := c.fallbackLocked(budget, min(budget*targetPct/100, c.usedLocked()/2), "the provider refused the request as over its context window", before)
	s.mu.Unlock()
	if ok {
		c.emit(ev, err)
	}
	return ok && err == nil
}

// ErrInvalidCondensation is a condensation that failed validation.
var ErrInvalidCondensation = errors.New("context: invalid condensation")
