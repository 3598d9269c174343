package context

import (
	"fmt"
	"strings"

	"github.com/harn-dev/harn/runtime/agent"
	"github.com/harn-dev/harn/util/text"
)

// MethodHandoff is the checkpoint a new task's first message sets (seed
// 000, "What a successor receives"): the earlier tasks' tool exchanges
// (their calls, their results, the text said beside them) leave the
// working set; their prompts, steers, pins and final answers stay. What a
// compaction summarised of their work leaves too; their outputs stay in
// the history, recallable by the references the summary keeps.
const MethodHandoff = "handoff"

// handoffLocked is the checkpoint that hands the lane over to a new task,
// or nil when the working set holds nothing of an earlier task's tool
// traffic. It is stored before the task's first message.
func (c *Lane) handoffLocked() *Checkpoint {
	l := c.l
	us := units(c.viewLocked())
	traffic := false
	for _, u := range us {
		traffic = traffic || u.kind == uExchange
	}
	var prev *Checkpoint
	if l.ckpt != nil {
		prev = l.ckpt.rec.Ckpt
		traffic = traffic || prev.Method != MethodHandoff && (len(prev.Lines) > 0 || prev.Head != "")
	}
	if !traffic || len(l.msgs) == 0 {
		return nil
	}
	cp := &Checkpoint{Method: MethodHandoff, From: l.msgs[0].rec.Seq, To: l.msgs[len(l.msgs)-1].rec.Seq, Before: c.usedLocked()}
	var lines []string
	if prev != nil {
		cp.From, cp.Dropped = prev.From, prev.Dropped
		cp.Head = userLines(prev.Head)
		for _, ln := range prev.Lines {
			if r, ok := refOnly(ln); ok {
				lines = append(lines, r)
			} else {
				cp.Dropped++
			}
		}
	}
	for _, u := range us {
		if u.kind != uExchange {
			for _, it := range u.items {
				cp.Retained = append(cp.Retained, it.rec.Seq)
			}
			continue
		}
		lines = append(lines, refLine(u))
	}
	// bounded as a compaction's summary: the oldest lines go first
	limit := summaryCap(l.budget)
	cp.Lines = lines
	for len(cp.Lines) > 0 && agent.Tokens(renderSummary(0, cp)) > limit {
		k := max(1, len(cp.Lines)/8)
		cp.Lines, cp.Dropped = cp.Lines[k:], cp.Dropped+k
	}
	cp.After = c.tokensAfter(cp)
	return cp
}

// refLine is an archived exchange's line without its calls: the
// references of its results, their status and size.
func refLine(u unit) string {
	var b strings.Builder
	fmt.Fprintf(&b, "- [%x]", u.items[0].rec.Seq)
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

// refOnly is a summary line without the calls it names: an exchange's
// line keeps its label and results; an answer's stays (the conversation);
// a line that names no result is dropped (false).
func refOnly(line string) (string, bool) {
	end := strings.IndexByte(line, ']')
	if !strings.HasPrefix(line, "- [") || end < 0 {
		return "", false
	}
	if strings.HasPrefix(line[end:], "] answer: ") {
		return line, true
	}
	i := strings.Index(line, " → ")
	if i < end {
		return "", false
	}
	return line[:end+1] + line[i:], true
}

// userLines keeps of a summary's head only its collapsed user messages
// and pins (the rolling summary's [msg:…] and [pin:…] lines): a
// condensation of earlier work is not handed over.
func userLines(head string) string {
	var keep []string
	for _, ln := range strings.Split(head, "\n") {
		if strings.HasPrefix(ln, "[msg:") || strings.HasPrefix(ln, "[pin:") {
			keep = append(keep, ln)
		}
	}
	if len(keep) == 0 {
		return ""
	}
	return "Earlier requests (collapsed, oldest first):\n" + strings.Join(keep, "\n")
}
