package context

import (
	stdctx "context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/harn-dev/harn/runtime/agent"
	"github.com/harn-dev/harn/util/clock"
)

// Kinds of history items.
const (
	KindMessage      = "message"      // a user prompt or steer, an assistant answer or tool calls, a tool result
	KindInstructions = "instructions" // a snapshot of the protected repository instructions
	KindCheckpoint   = "checkpoint"   // a compaction: covered range, exact retained tail, summary
	KindLane         = "lane"         // a lane forked from another
	KindBudget       = "budget"       // the usable input budget changed
)

// States of an item in the working set.
const (
	StatePinned   = "pinned"   // protected: always in the working set
	StateActive   = "active"   // after the last checkpoint
	StateRetained = "retained" // covered by the last checkpoint and kept in its tail
	StateArchived = "archived" // covered by a checkpoint, out of the working set; recallable
)

// MainLane is the lane a session's context starts with.
const MainLane = "main"

// Fork points.
const (
	UpToHead   = ^uint64(0) // fork a lane at its head
	UpToSystem = uint64(0)  // fork only the protected prefix (the instructions)
)

// Defaults of Options.
const (
	DefaultPreviewBytes    = 8 << 10
	DefaultMaxOutputBytes  = 16 << 20
	DefaultCondenseTimeout = 60 * time.Second
	chunkBytes             = 64 << 10
)

// Options configure a Space.
type Options struct {
	// Compaction enables LLM condensation (a Condenser is needed too);
	// false: the deterministic fallback, only once over budget.
	Compaction bool
	Condenser  Condenser
	// CondenseTimeout bounds one condensation; default DefaultCondenseTimeout.
	CondenseTimeout time.Duration
	// PreviewBytes bounds what the model sees of one tool output (head
	// and tail); default DefaultPreviewBytes.
	PreviewBytes int
	// MaxOutputBytes bounds one stored tool output; default DefaultMaxOutputBytes.
	MaxOutputBytes int
	// OnCompact observes each compaction, after it is stored; it must not block.
	OnCompact func(Compaction)
	// NoSync leaves the durability of appends to the next sync (benchmarks
	// that build a large history); production keeps it false.
	NoSync bool
	Clock  clock.Clock
	Logger *slog.Logger
}

// Compaction is the canonical record of one compaction.
type Compaction struct {
	Session    string `json:"session"`
	Lane       string `json:"lane"`
	Checkpoint uint64 `json:"checkpoint"`
	Method     string `json:"method"` // llm, fallback, rolling, recovery
	Before     int    `json:"before_tokens"`
	After      int    `json:"after_tokens"`
	Budget     int    `json:"budget_tokens"`
	Archived   int    `json:"archived_items"`
	Note       string `json:"note,omitempty"` // why a fallback ran: stall, invalid output, timeout, unavailable
}

// Checkpoint is a compaction as stored: the covered range of history
// [From, To], the exact retained tail (in working-set order), and the
// summary that stands for what it archived.
type Checkpoint struct {
	Method   string   `json:"method"`
	From     uint64   `json:"from"`
	To       uint64   `json:"to"`
	Retained []uint64 `json:"retained,omitempty"`
	Head     string   `json:"head,omitempty"`  // the condensation or rolling summary
	Lines    []string `json:"lines,omitempty"` // one reference line per archived exchange, oldest first
	Dropped  int      `json:"dropped,omitempty"`
	Before   int      `json:"before"`
	After    int      `json:"after"`
	Note     string   `json:"note,omitempty"`
}

type forkRec struct {
	Parent     string `json:"parent"`
	At         uint64 `json:"at"`
	Instr      uint64 `json:"instr,omitempty"`
	Checkpoint uint64 `json:"checkpoint,omitempty"`
}

type itemRec struct {
	Seq    uint64         `json:"seq"`
	Lane   string         `json:"lane"`
	Kind   string         `json:"kind"`
	Msg    *agent.Message `json:"msg,omitempty"`
	Pinned bool           `json:"pinned,omitempty"`
	Size   int            `json:"size,omitempty"` // bytes of the externalised output
	Text   string         `json:"text,omitempty"` // instructions
	Ckpt   *Checkpoint    `json:"ckpt,omitempty"`
	Fork   *forkRec       `json:"fork,omitempty"`
	Budget int            `json:"budget,omitempty"`
	// Args are the arguments of Msg's tool calls, byte for byte as the
	// model sent them (Msg stores none: encoding/json would compact and
	// escape a RawMessage, and refuse one that is not JSON), so that a
	// restart rebuilds the very request bytes (the provider's prompt
	// cache). A record without them (an older one) keeps Msg's.
	Args [][]byte `json:"args,omitempty"`
}

// encodeRec is a record as stored: its calls' arguments raw, beside the
// message.
func encodeRec(r itemRec) ([]byte, error) {
	if r.Msg != nil && len(r.Msg.Calls) > 0 {
		m := *r.Msg
		m.Calls = make([]agent.ToolCall, len(r.Msg.Calls))
		r.Args = make([][]byte, len(m.Calls))
		for i, c := range r.Msg.Calls {
			r.Args[i] = []byte(c.Args)
			c.Args = nil
			m.Calls[i] = c
		}
		r.Msg = &m
	}
	return json.Marshal(r)
}

// decodeRec reads a stored record back.
func decodeRec(b []byte) (itemRec, error) {
	var r itemRec
	if err := json.Unmarshal(b, &r); err != nil {
		return r, err
	}
	if r.Msg != nil && len(r.Args) == len(r.Msg.Calls) {
		for i := range r.Msg.Calls {
			r.Msg.Calls[i].Args = json.RawMessage(r.Args[i])
		}
	}
	r.Args = nil
	return r, nil
}

type item struct {
	rec    itemRec
	tokens int // of its provider-visible message
	// the reference line of the unit (an exchange or an answer) that ends
	// at this item, made when the item is applied: a checkpoint sums
	// lineTok and writes only the lines it keeps
	line     string
	lineTok  int
	lineFrom uint64 // the unit's first item
	lineN    int    // the unit's items
	// the provider-visible text of an instructions snapshot or a
	// checkpoint, rendered once
	text string
}

type sessionRec struct {
	Tree string `json:"tree"`
	Lane string `json:"lane"`
}

// Space is the context room of one node: every session's history in one
// Store. It is safe for concurrent use.
type Space struct {
	st   Store
	opts Options
	log  *slog.Logger

	mu    sync.Mutex
	trees map[string]*tree
	sess  map[string]*Lane
}

type tree struct {
	id    string
	seq   uint64
	items map[uint64]*item
	lanes map[string]*lane
}

type lane struct {
	name   string
	tree   *tree
	msgs   []*item // the lane's messages, in seq order (a fork's prefix shared)
	instr  *item
	ckpt   *item
	budget int
	task   string // the task of the last user message
	rev    uint64 // appends to this lane
}

// NewSpace returns a Space over st.
func NewSpace(st Store, opts Options) *Space {
	if opts.PreviewBytes <= 0 {
		opts.PreviewBytes = DefaultPreviewBytes
	}
	if opts.MaxOutputBytes <= 0 {
		opts.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if opts.CondenseTimeout <= 0 {
		opts.CondenseTimeout = DefaultCondenseTimeout
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Space{st: st, opts: opts, log: opts.Logger, trees: map[string]*tree{}, sess: map[string]*Lane{}}
}

// Open returns the context of session, creating it when it has none; dir
// is where its repository instructions are read (may be empty). A new
// session's record is durable when Open returns.
func (s *Space) Open(session, dir string) (*Lane, error) { return s.open(session, dir, true) }

// OpenUnsynced is Open without the fsync of a new session's record: the
// record is written in order, and is durable once the caller's next
// synced write to the same Store returns (a sync covers every earlier
// write). It is for a caller that makes such a write before it reports
// the session open.
func (s *Space) OpenUnsynced(session, dir string) (*Lane, error) { return s.open(session, dir, false) }

func (s *Space) open(session, dir string, sync bool) (*Lane, error) {
	if err := checkID(session); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l, err := s.lookupLocked(session)
	if err == nil {
		if dir != "" {
			l.dir = dir
		}
		return l, nil
	}
	if err != ErrNoSession {
		return nil, err
	}
	if err := s.putRec(sessionKey(session), sessionRec{Tree: session, Lane: MainLane}, sync); err != nil {
		return nil, err
	}
	t := &tree{id: session, items: map[uint64]*item{}, lanes: map[string]*lane{}}
	t.lanes[MainLane] = &lane{name: MainLane, tree: t}
	s.trees[session] = t
	l = &Lane{s: s, session: session, l: t.lanes[MainLane], dir: dir}
	s.sess[session] = l
	return l, nil
}

// Lookup returns the stored context of session (after a restart too).
func (s *Space) Lookup(session string) (*Lane, error) {
	if err := checkID(session); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lookupLocked(session)
}

func (s *Space) lookupLocked(session string) (*Lane, error) {
	if l := s.sess[session]; l != nil {
		return l, nil
	}
	var rec sessionRec
	found := false
	err := s.st.Scan(sessionKey(session), func(k, v []byte) error {
		if string(k) != string(sessionKey(session)) {
			return nil
		}
		found = true
		return json.Unmarshal(v, &rec)
	})
	if err != nil {
		return nil, fmt.Errorf("%w: session %s: %w", ErrCorrupt, session, err)
	}
	if !found {
		return nil, ErrNoSession
	}
	t, err := s.loadTree(rec.Tree)
	if err != nil {
		return nil, err
	}
	ln := t.lanes[rec.Lane]
	if ln == nil {
		if rec.Lane != MainLane {
			return nil, fmt.Errorf("%w: session %s: lane %s is not stored", ErrCorrupt, session, rec.Lane)
		}
		ln = &lane{name: MainLane, tree: t}
		t.lanes[MainLane] = ln
	}
	l := &Lane{s: s, session: session, l: ln}
	s.sess[session] = l
	return l, nil
}

// loadTree reads a tree's history and rebuilds its lanes.
func (s *Space) loadTree(id string) (*tree, error) {
	if t := s.trees[id]; t != nil {
		return t, nil
	}
	t := &tree{id: id, items: map[uint64]*item{}, lanes: map[string]*lane{}}
	t.lanes[MainLane] = &lane{name: MainLane, tree: t}
	err := s.st.Scan(itemPrefix(id), func(_, v []byte) error {
		r, err := decodeRec(v)
		if err != nil {
			return err
		}
		t.apply(&item{rec: r})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: tree %s: %w", ErrCorrupt, id, err)
	}
	s.trees[id] = t
	return t, nil
}

// apply adds a stored or new item to the tree's state.
func (t *tree) apply(it *item) {
	r := &it.rec
	t.items[r.Seq] = it
	t.seq = max(t.seq, r.Seq)
	if r.Kind == KindLane && r.Fork != nil {
		p := t.lanes[r.Fork.Parent]
		n := &lane{name: r.Lane, tree: t}
		if p != nil {
			i := sort.Search(len(p.msgs), func(i int) bool { return p.msgs[i].rec.Seq > r.Fork.At })
			n.msgs = append([]*item(nil), p.msgs[:i]...)
			n.budget = p.budget
		}
		n.instr = t.items[r.Fork.Instr]
		n.ckpt = t.items[r.Fork.Checkpoint]
		if n.task == "" && len(n.msgs) > 0 {
			n.task = lastUserTask(n.msgs)
		}
		t.lanes[r.Lane] = n
		return
	}
	l := t.lanes[r.Lane]
	if l == nil {
		l = &lane{name: r.Lane, tree: t}
		t.lanes[r.Lane] = l
	}
	l.rev++
	switch r.Kind {
	case KindMessage:
		if r.Msg == nil {
			return
		}
		it.tokens = agent.MessageTokens(*r.Msg)
		l.msgs = append(l.msgs, it)
		l.cacheLine()
		if r.Msg.Role == agent.RoleUser && r.Msg.Task != "" {
			l.task = r.Msg.Task
		}
	case KindInstructions:
		m := instrMessage(r.Text)
		it.text, it.tokens = m.Text, agent.MessageTokens(m)
		l.instr = it
	case KindCheckpoint:
		m := summaryMessage(r.Seq, r.Ckpt)
		it.text, it.tokens = m.Text, agent.MessageTokens(m)
		l.ckpt = it
	case KindBudget:
		l.budget = r.Budget
	}
}

func lastUserTask(ms []*item) string {
	for i := len(ms) - 1; i >= 0; i-- {
		if m := ms[i].rec.Msg; m.Role == agent.RoleUser && m.Task != "" {
			return m.Task
		}
	}
	return ""
}

// putRec writes a record, with an fsync when sync is set.
func (s *Space) putRec(key []byte, v any, sync bool) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	put := s.st.Put
	if sync {
		put = s.st.PutSync
	}
	if err := put(key, b); err != nil {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return nil
}

// appendLocked stores new items of a lane, the last write synced, then
// applies them.
func (s *Space) appendLocked(t *tree, recs []itemRec, sync bool) ([]*item, error) {
	out := make([]*item, 0, len(recs))
	for i := range recs {
		recs[i].Seq = t.seq + 1 + uint64(i)
		b, err := encodeRec(recs[i])
		if err != nil {
			return nil, err
		}
		put := s.st.Put
		if sync && i == len(recs)-1 && !s.opts.NoSync {
			put = s.st.PutSync
		}
		if err := put(itemKey(t.id, recs[i].Seq), b); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrClosed, err)
		}
	}
	for _, r := range recs {
		it := &item{rec: r}
		t.apply(it)
		out = append(out, it)
	}
	return out, nil
}

// Fork opens session's context as a new lane of from's tree, sharing from's
// history up to upTo (UpToHead: all of it; UpToSystem: its instructions
// only). Nothing is copied. The new lane's records are durable when Fork
// returns.
func (s *Space) Fork(session, from string, upTo uint64) (*Lane, error) {
	return s.fork(session, from, upTo, true)
}

// ForkUnsynced is Fork without the fsync: the lane's records are durable
// once the caller's next synced write to the same Store returns, as with
// OpenUnsynced.
func (s *Space) ForkUnsynced(session, from string, upTo uint64) (*Lane, error) {
	return s.fork(session, from, upTo, false)
}

func (s *Space) fork(session, from string, upTo uint64, sync bool) (*Lane, error) {
	if err := checkID(session); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.lookupLocked(session); err == nil {
		return nil, fmt.Errorf("%w: %s", ErrExists, session)
	}
	src, err := s.lookupLocked(from)
	if err != nil {
		return nil, fmt.Errorf("fork %s: %w", from, err)
	}
	p, t := src.l, src.l.tree
	if upTo == UpToHead {
		upTo = t.seq
	}
	f := &forkRec{Parent: p.name, At: upTo}
	if p.instr != nil {
		f.Instr = p.instr.rec.Seq
	}
	if p.ckpt != nil && p.ckpt.rec.Seq <= upTo && upTo != UpToSystem {
		f.Checkpoint = p.ckpt.rec.Seq
	}
	// One sync covers both records: the session's, written last, syncs the
	// lane's before it.
	if _, err := s.appendLocked(t, []itemRec{{Lane: session, Kind: KindLane, Fork: f}}, false); err != nil {
		return nil, err
	}
	if err := s.putRec(sessionKey(session), sessionRec{Tree: t.id, Lane: session}, sync); err != nil {
		return nil, err
	}
	l := &Lane{s: s, session: session, l: t.lanes[session], dir: src.dir}
	s.sess[session] = l
	return l, nil
}

// Lane is one session's context: the agent loop's Context.
type Lane struct {
	s       *Space
	session string
	l       *lane
	dir     string
	// set by SetCompaction; else the Space's options
	compaction *bool
	cond       Condenser
	pending    *ops // the operator's pins and compaction waiting for a step boundary (ops.go); under the Space's mu

	lastMu     sync.Mutex
	lastMethod string    // the last compaction this process saw (LastCompaction)
	lastAt     time.Time // when
}

var _ agent.CompactionReporter = (*Lane)(nil)

// Recallable reports whether the lane holds something the recall tool
// can give back that the model does not see whole: a tool output cut to
// its preview, or a checkpoint's archive.
func (c *Lane) Recallable() bool {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if c.l.ckpt != nil {
		return true
	}
	for _, it := range c.l.msgs {
		if it.rec.Kind == KindMessage && it.rec.Size > c.s.opts.PreviewBytes {
			return true
		}
	}
	return false
}

// LastCompaction is the method and time of the lane's last compaction
// this process ran ("" and zero for none yet), for the TUI's context
// line and the provider request's span.
func (c *Lane) LastCompaction() (string, time.Time) {
	c.lastMu.Lock()
	defer c.lastMu.Unlock()
	return c.lastMethod, c.lastAt
}

// SetCompaction sets the lane's LLM compaction (enabled and its condenser)
// and the directory its instructions are read from (when not empty).
func (c *Lane) SetCompaction(enabled bool, cond Condenser, dir string) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	c.compaction, c.cond = &enabled, cond
	if dir != "" {
		c.dir = dir
	}
}

// condenser is the lane's condenser when LLM compaction is on, else nil.
func (c *Lane) condenser() Condenser {
	on, cond := c.s.opts.Compaction, c.s.opts.Condenser
	if c.compaction != nil {
		on = *c.compaction
	}
	if c.cond != nil {
		cond = c.cond
	}
	if !on {
		return nil
	}
	return cond
}

var _ agent.DeferredContext = (*Lane)(nil)

// Session is the lane's session.
func (c *Lane) Session() string { return c.session }

// Append adds messages to the history. A tool result's text is stored
// whole as an externalised output; the model sees a bounded preview and
// its reference. The first message of a new task re-reads the protected
// instructions.
func (c *Lane) Append(ms ...agent.Message) error { return c.append(ms, true) }

// AppendDeferred is Append without the fsync: the records are written in
// order and are durable once the caller's next synced write to the same
// Store returns (a sync covers every earlier write). It is for a caller
// that makes such a write before anything depends on them
// (agent.DeferredContext).
func (c *Lane) AppendDeferred(ms ...agent.Message) error { return c.append(ms, false) }

func (c *Lane) append(ms []agent.Message, sync bool) error {
	if len(ms) == 0 {
		return nil
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	return c.appendLocked(ms, false, sync)
}

// Pin appends a user message that stays in the working set; only the
// rolling summary of last resort collapses it.
func (c *Lane) Pin(m agent.Message) error {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	return c.appendLocked([]agent.Message{m}, true, true)
}

func (c *Lane) appendLocked(ms []agent.Message, pinned, sync bool) error {
	s, l, t := c.s, c.l, c.l.tree
	var recs []itemRec
	for _, m := range ms {
		if m.Role == agent.RoleUser && m.Task != "" && m.Task != l.task {
			// a new task: the earlier tasks' tool traffic leaves the
			// working set (handoff.go)
			if cp := c.handoffLocked(); cp != nil && len(recs) == 0 {
				recs = append(recs, itemRec{Lane: l.name, Kind: KindCheckpoint, Ckpt: cp})
			}
			if text := readInstructions(c.dir); l.instr == nil || l.instr.rec.Text != text {
				if text != "" || l.instr != nil {
					recs = append(recs, itemRec{Lane: l.name, Kind: KindInstructions, Text: text})
				}
			}
		}
		recs = append(recs, itemRec{Lane: l.name, Kind: KindMessage, Msg: &m, Pinned: pinned})
	}
	// Externalise tool outputs: the bytes first, under the item's future
	// sequence number, then the item with its preview.
	next := t.seq + 1
	for i := range recs {
		r := &recs[i]
		seq := next + uint64(i)
		if r.Kind != KindMessage || r.Msg.Role != agent.RoleTool {
			continue
		}
		full := r.Msg.Text
		if len(full) > s.opts.MaxOutputBytes {
			full = full[:s.opts.MaxOutputBytes]
		}
		for off, n := 0, uint32(0); off < len(full) || n == 0; off, n = off+chunkBytes, n+1 {
			end := min(off+chunkBytes, len(full))
			if err := s.st.Put(blobKey(t.id, seq, n), []byte(full[off:end])); err != nil {
				return fmt.Errorf("%w: %w", ErrClosed, err)
			}
			if end == len(full) {
				break
			}
		}
		r.Size = len(full)
		r.Msg.Text = preview(full, refOf(seq), len(r.Msg.Text), s.opts.PreviewBytes)
	}
	_, err := s.appendLocked(t, recs, sync)
	return err
}

// WorkingSet returns the provider-visible messages of the next request
// within budget tokens, compacting first when the set reaches the
// admission line (80% with compaction enabled, else the budget itself).
func (c *Lane) WorkingSet(ctx stdctx.Context, task string, budget int) ([]agent.Message, error) {
	c.Boundary(ctx) // the operator's pins and compaction (ops.go): a step boundary
	c.admit(ctx, task, budget)
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	return c.providerLocked(), nil
}

// ProviderView is the messages the next request carries, as stored.
func (c *Lane) ProviderView() []agent.Message {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	return c.providerLocked()
}

func (c *Lane) providerLocked() []agent.Message {
	l := c.l
	retained, after := c.viewParts()
	out := make([]agent.Message, 0, 2+len(retained)+len(after))
	if l.instr != nil && l.instr.rec.Text != "" {
		out = append(out, agent.Message{Role: agent.RoleUser, Text: l.instr.text})
	}
	if l.ckpt != nil {
		out = append(out, agent.Message{Role: agent.RoleUser, Text: l.ckpt.text})
	}
	for _, seq := range retained {
		if it := l.tree.items[seq]; it != nil && it.rec.Msg != nil {
			out = append(out, *it.rec.Msg)
		}
	}
	for _, it := range after {
		out = append(out, *it.rec.Msg)
	}
	return out
}

// viewParts are the two parts of the working set's messages, without a
// copy: the last checkpoint's retained tail (sequence numbers) and the
// lane's messages after its covered range.
func (c *Lane) viewParts() ([]uint64, []*item) {
	l := c.l
	if l.ckpt == nil {
		return nil, l.msgs
	}
	cp := l.ckpt.rec.Ckpt
	i := sort.Search(len(l.msgs), func(i int) bool { return l.msgs[i].rec.Seq > cp.To })
	return cp.Retained, l.msgs[i:]
}

// viewLocked is the lane's messages in the working set: the last
// checkpoint's retained tail, then every message after it.
func (c *Lane) viewLocked() []*item {
	retained, after := c.viewParts()
	out := make([]*item, 0, len(retained)+len(after))
	for _, seq := range retained {
		if it := c.l.tree.items[seq]; it != nil && it.rec.Msg != nil {
			out = append(out, it)
		}
	}
	return append(out, after...)
}

// usedLocked is the tokens of the working set.
func (c *Lane) usedLocked() int {
	n := 0
	if c.l.instr != nil && c.l.instr.rec.Text != "" {
		n += c.l.instr.tokens
	}
	if c.l.ckpt != nil {
		n += c.l.ckpt.tokens
	}
	retained, after := c.viewParts()
	for _, seq := range retained {
		if it := c.l.tree.items[seq]; it != nil && it.rec.Msg != nil {
			n += it.tokens
		}
	}
	for _, it := range after {
		n += it.tokens
	}
	return n
}

// History returns every message of the lane, as stored (tool results as
// their previews; Recall has their bytes).
func (c *Lane) History() []agent.Message {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	out := make([]agent.Message, 0, len(c.l.msgs))
	for _, it := range c.l.msgs {
		out = append(out, *it.rec.Msg)
	}
	return out
}
