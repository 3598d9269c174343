package context

import (
	stdctx "context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"unicode/utf8"

	"github.com/harn-dev/harn/runtime/agent"
	"github.com/harn-dev/harn/runtime/agent/tools"
	"github.com/harn-dev/harn/util/safefs"
)

// Recall returns the exact bytes of the lane's externalised output ref,
// from offset, length bytes (length < 0: to its end).
func (c *Lane) Recall(ref string, offset, length int) ([]byte, int, error) {
	seq, err := parseRef(ref)
	if err != nil {
		return nil, 0, err
	}
	c.s.mu.Lock()
	it := c.l.tree.items[seq]
	ok := it != nil && it.rec.Msg != nil && it.rec.Msg.Role == agent.RoleTool && c.visibleLocked(it)
	tid := c.l.tree.id
	c.s.mu.Unlock()
	if !ok {
		return nil, 0, fmt.Errorf("%w: %s", ErrNoRef, ref)
	}
	size := it.rec.Size
	if length < 0 {
		length = size - offset
	}
	if offset < 0 || length < 0 || offset > size || offset+length > size {
		return nil, size, fmt.Errorf("%w: [%d, %d) of %d bytes", ErrBadRange, offset, offset+length, size)
	}
	// One scan of the output's chunks, in order; a chunk's place is the
	// sum of those before it (so the chunk size may differ between
	// outputs), and only the bytes asked for are copied, once.
	out := make([]byte, 0, length)
	lo := 0
	err = c.s.st.Scan(blobPrefix(tid, seq), func(_, v []byte) error {
		hi := lo + len(v)
		if hi > offset && lo < offset+length {
			out = append(out, v[max(offset-lo, 0):min(offset+length-lo, len(v))]...)
		}
		lo = hi
		if lo >= offset+length {
			return errStopScan
		}
		return nil
	})
	if errors.Is(err, errStopScan) {
		err = nil
	}
	if err != nil {
		return nil, size, fmt.Errorf("%w: %s: %w", ErrCorrupt, ref, err)
	}
	if len(out) != length {
		return nil, size, fmt.Errorf("%w: %s: %d of %d bytes stored", ErrCorrupt, ref, len(out), length)
	}
	return out, size, nil
}

// errStopScan ends a scan early.
var errStopScan = errors.New("context: scan done")

// visibleLocked: the item is in the lane's history (its own, or the
// shared prefix it forked).
func (c *Lane) visibleLocked(it *item) bool {
	ms := c.l.msgs
	i := sort.Search(len(ms), func(i int) bool { return ms[i].rec.Seq >= it.rec.Seq })
	return i < len(ms) && ms[i] == it
}

// RecallTool is the name of the recall tool.
const RecallTool = "recall"

var recallSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"ref":{"type":"string","description":"an output reference such as out-1a"},` +
	`"offset":{"type":"integer","minimum":0,"description":"first byte, default 0"},` +
	`"length":{"type":"integer","minimum":1,"description":"bytes to return, default to the end (at most the preview size)"}},` +
	`"required":["ref"],"additionalProperties":false}`)

// RecallSpec is the recall tool's contract.
func RecallSpec() tools.Spec {
	h := sha256.Sum256(recallSchema)
	return tools.Spec{Name: RecallTool, Provider: "harn", Schema: recallSchema, Hash: hex.EncodeToString(h[:]),
		Description: "Return the exact bytes of an earlier tool output by its reference (out-…), or a byte range of it. " +
			"Use it when a preview or a checkpoint left out what you need."}
}

// Box adds the recall tool to a session's tool box.
type Box struct {
	tools.Box
	Space *Space
}

var _ tools.Box = Box{}

// Specs are the inner box's and recall.
func (b Box) Specs(session, task string) []tools.Spec {
	return append(b.Box.Specs(session, task), RecallSpec())
}

// Run runs recall, or the inner box's tool.
func (b Box) Run(ctx stdctx.Context, c tools.Call) (tools.Result, error) {
	if c.Name != RecallTool {
		return b.Box.Run(ctx, c)
	}
	var a struct {
		Ref    string `json:"ref"`
		Offset int    `json:"offset"`
		Length int    `json:"length"`
	}
	fail := func(err error) (tools.Result, error) { return tools.Result{Content: err.Error(), IsError: true}, err }
	if err := json.Unmarshal(c.Args, &a); err != nil {
		return fail(fmt.Errorf("recall: arguments: %w", err))
	}
	l, err := b.Space.Lookup(c.Session)
	if err != nil {
		return fail(err)
	}
	// The answer is the model's whole view of it: the bytes and their
	// trailer must fit the preview, or the context would cut the answer
	// again (a recall of a recall).
	_, size, err := l.Recall(a.Ref, 0, 0)
	if err != nil {
		return fail(err)
	}
	if a.Offset < 0 || a.Offset > size {
		return fail(fmt.Errorf("%w: offset %d of %d bytes", ErrBadRange, a.Offset, size))
	}
	limit := RecallLimit(b.Space.opts.PreviewBytes, size)
	length := a.Length
	if length <= 0 || length > size-a.Offset {
		length = size - a.Offset
	}
	clamped := length > limit
	length = min(length, limit)
	out, _, err := l.Recall(a.Ref, a.Offset, length)
	if err != nil {
		return fail(err)
	}
	if clamped { // a range the model did not name ends on a whole rune
		out = out[:runeCut(out)]
	}
	s := string(out)
	if end := a.Offset + len(out); end < size {
		s += recallTrailer(a.Offset, end, size)
	}
	return tools.Result{Content: s}, nil
}

// recallTrailer is the one line after a recall's bytes that says where
// the rest starts.
func recallTrailer(from, to, size int) string {
	return fmt.Sprintf("\n[recall: bytes %d to %d of %d; ask for offset %d for more]", from, to, size, to)
}

// RecallLimit is the most bytes one recall of an output of size bytes
// answers with, so that they and their trailer fit preview bytes: the
// model sees a recall whole, never cut to a preview of its own.
func RecallLimit(preview, size int) int {
	return max(preview-len(recallTrailer(size, size, size)), 1)
}

// runeCut is the length of b without a rune its end cuts in two.
func runeCut(b []byte) int {
	n := len(b)
	for i := n - 1; i >= 0 && i >= n-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) && i > 0 {
				return i
			}
			break
		}
	}
	return n
}

// Instruction files, re-read at the start of each task, and their bounds.
var InstructionFiles = []string{"AGENTS.md", "CLAUDE.md", ".harn/instructions"}

const (
	maxInstructionFile  = 32 << 10
	maxInstructionTotal = 64 << 10
	maxInstructionDir   = 32
)

// readInstructions reads dir's protected instructions, bounded, in a
// fixed order; .harn/instructions may be a file or a folder of files.
// Each is read through safefs: a symlink out of dir (AGENTS.md ->
// /proc/self/environ, CLAUDE.md -> the node's key) or into the node's data
// dir is skipped, never read.
func readInstructions(dir string) string {
	if dir == "" {
		return ""
	}
	d, err := safefs.Open(dir)
	if err != nil {
		return ""
	}
	defer d.Close()
	var out []byte
	add := func(name string) {
		b, err := d.ReadHead(name, maxInstructionFile)
		if err != nil || len(b) == 0 || len(out) >= maxInstructionTotal {
			return
		}
		out = append(out, "## "+name+"\n\n"...)
		out = append(out, b[:min(len(b), maxInstructionTotal-len(out))]...)
		out = append(out, "\n\n"...)
	}
	for _, f := range InstructionFiles {
		st, err := d.Stat(f)
		if err != nil {
			continue
		}
		if !st.IsDir() {
			add(f)
			continue
		}
		ents, err := d.ReadDir(f)
		if err != nil {
			continue
		}
		for i, e := range ents {
			if i >= maxInstructionDir {
				break
			}
			if !e.IsDir() { // a symlink too: read only when it stays in dir
				add(f + "/" + e.Name())
			}
		}
	}
	return string(out)
}

// Recall is the recall tool as a core tool of a session's tool box
// (tools.Config.Extra).
func (s *Space) Recall() tools.Extra {
	return tools.Extra{Spec: RecallSpec(), Run: func(ctx stdctx.Context, c tools.Call) (tools.Result, error) {
		return Box{Space: s}.Run(ctx, c)
	}, Show: func(session, _ string) bool {
		l, err := s.Lookup(session)
		return err == nil && l.Recallable()
	}}
}
