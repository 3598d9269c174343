package agent

import (
	"context"
	"sync"
)

// Context is the session's conversation as the loop sees it: it keeps
// every message and answers, before every model call, with the
// provider-visible working set. The in-memory MemContext is the first
// implementation; a context manager with lanes, checkpoints and
// compaction replaces it behind the same interface.
type Context interface {
	// Append adds messages to the session's history.
	Append(ms ...Message) error
	// WorkingSet returns the messages of the next model request, within
	// budget tokens (the usable input left after the system prefix and
	// the tools); the current turn (from the task's first message) is
	// always kept whole.
	WorkingSet(ctx context.Context, task string, budget int) ([]Message, error)
	// Recover is told that the provider refused the request as over its
	// context window: it sets a recovery checkpoint that keeps only the
	// current turn, and reports whether that changed anything (the loop
	// then retries once).
	Recover(task string) bool
}

// DeferredContext is a Context whose appends can leave their fsync to the
// next synced write to the same store (Config.SharedSync).
type DeferredContext interface {
	Context
	// AppendDeferred is Append without the fsync: the messages are written
	// in order and are durable at the store's next synced write.
	AppendDeferred(ms ...Message) error
}

// maxMemMessages bounds a MemContext's history.
const maxMemMessages = 4096

// MemContext is an in-memory Context, safe for concurrent use. Over the
// budget it leaves out the oldest messages before the current turn, a
// tool result never without the call it answers; of earlier tasks it
// sends only the conversation (prompts, steers, answers), never their
// tool calls and results.
type MemContext struct {
	mu   sync.Mutex
	msgs []Message
	from int // recovery checkpoint: the first message still sent
}

// NewMemContext returns an empty MemContext.
func NewMemContext() *MemContext { return &MemContext{} }

// Append adds messages.
func (c *MemContext) Append(ms ...Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = append(c.msgs, ms...)
	if n := len(c.msgs) - maxMemMessages; n > 0 {
		c.msgs = append([]Message(nil), c.msgs[n:]...)
		c.from = max(0, c.from-n)
	}
	return nil
}

// History returns every message kept.
func (c *MemContext) History() []Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Message(nil), c.msgs...)
}

func (c *MemContext) turnStart(task string) int {
	for i, m := range c.msgs {
		if m.Task == task {
			return i
		}
	}
	return len(c.msgs)
}

// WorkingSet returns the newest messages that fit budget, from the
// checkpoint on, the current turn whole.
func (c *MemContext) WorkingSet(_ context.Context, task string, budget int) ([]Message, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	turn := max(c.turnStart(task), c.from)
	used := 0
	for _, m := range c.msgs[turn:] {
		used += MessageTokens(m)
	}
	start := turn
	for start > c.from {
		n := MessageTokens(c.msgs[start-1])
		if budget > 0 && used+n > budget {
			break
		}
		used += n
		start--
	}
	for start < turn && c.msgs[start].Role == RoleTool { // no orphan tool result
		start++
	}
	// Of earlier tasks only the conversation: no tool calls, no results.
	out := make([]Message, 0, len(c.msgs)-start)
	for i, m := range c.msgs[start:] {
		if start+i < turn && m.Task != task && (m.Role == RoleTool || len(m.Calls) > 0) {
			continue
		}
		out = append(out, m)
	}
	return out, nil
}

// Recover moves the checkpoint to the current turn.
func (c *MemContext) Recover(task string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.turnStart(task)
	if t <= c.from {
		return false
	}
	c.from = t
	return true
}
