// Package claims is the node's room for write claims: it decides, before an
// agent writes a file, whether another live session in the mesh holds that
// file of that repository, and claims it for the writer through the
// registry when it is free. The claims themselves live in the Raft registry
// (raftstore), so the log's order picks the winner of a race; this room
// reads the local replica, writes through an interface, and words the
// answer.
package claims

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/harn-dev/harn/node/claims/claimwire"
	"github.com/harn-dev/harn/raftstore"
	"github.com/harn-dev/harn/util/clock"
	"github.com/harn-dev/harn/util/text"
)

// The claims' wire half (request, verdict, modes, phases, decisions) lives
// in claimwire, which the client links without the registry.
type (
	Mode    = claimwire.Mode
	Request = claimwire.Request
	Verdict = claimwire.Verdict
	Holder  = claimwire.Holder
)

// Modes.
const (
	ModeOff     = claimwire.ModeOff
	ModeWarn    = claimwire.ModeWarn
	ModeEnforce = claimwire.ModeEnforce
)

// ErrBadMode is a --claims value that is not a mode.
var ErrBadMode = claimwire.ErrBadMode

// ParseMode reads a --claims value; "" is the default, enforce.
func ParseMode(s string) (Mode, error) { return claimwire.ParseMode(s) }

// Decisions.
const (
	DecideNone  = claimwire.DecideNone
	DecideAllow = claimwire.DecideAllow
	DecideWarn  = claimwire.DecideWarn
	DecideDeny  = claimwire.DecideDeny
)

// Phases of a request.
const (
	PhasePre  = claimwire.PhasePre
	PhasePost = claimwire.PhasePost
)

// Table reads the claims (the local replica).
type Table interface {
	ClaimOf(repo, path string) (raftstore.Claim, bool)
}

// Writer applies a claim command through the registry and returns once the
// local replica reflects it.
type Writer interface {
	Write(ctx context.Context, cmd raftstore.Command) error
}

// Describer names a session for a denial: its name, agent, task and node,
// and whether that node can be reached now.
type Describer interface {
	Describe(session, node string) Holder
}

// Config builds a Decider.
type Config struct {
	Mode     Mode
	Node     string // this node's name, recorded with its claims
	Table    Table
	Writer   Writer
	Describe Describer
	// Budget bounds the claim write (the hook's own bound is shorter
	// still); 0 means 250 ms.
	Budget time.Duration
	// Clock tells the claims' times and paces the retry of claims that
	// could not be recorded; nil is the real clock.
	Clock clock.Clock
	// Rows, when set, is told when a claim is pending, lands or is
	// dropped.
	Rows Rows
	// Journal, when set, keeps the pending claims across a restart
	// (Restore rebuilds them); OnJournalError hears of a failed write.
	Journal        Journal
	OnJournalError func(error)
}

// Decider answers write requests. It is safe for concurrent use.
type Decider struct {
	cfg Config

	mu      sync.Mutex
	pending []pendingClaim
	nextID  uint64 // the last pending claim's id
	// taken: each session's write calls in flight and what they took
	// (recorded or pending), released when the call is denied after all
	// (calls.go).
	taken map[string][]*takenCall
	// reportsEnds: the sessions seen to report a call's end by its id.
	reportsEnds map[string]bool

	kick      chan struct{}
	stop      chan struct{}
	done      chan struct{}
	startOnce sync.Once // the retry starts with the first pending claim
	closeOnce sync.Once
}

// New returns a Decider.
func New(cfg Config) *Decider {
	if cfg.Budget <= 0 {
		cfg.Budget = 250 * time.Millisecond
	}
	if cfg.Mode == "" {
		cfg.Mode = ModeEnforce
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	return &Decider{cfg: cfg, taken: map[string][]*takenCall{}, reportsEnds: map[string]bool{},
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// Mode is the decider's mode.
func (d *Decider) Mode() Mode { return d.cfg.Mode }

// Decide answers one request: held by another live session gives deny
// (warn in warn mode or after the write); free gives allow once the claim
// is recorded for the session (a claim that cannot be recorded within the
// budget still allows, with a diagnostic).
func (d *Decider) Decide(ctx context.Context, r Request) Verdict {
	if d.cfg.Mode == ModeOff || r.Session == "" || r.Repo == "" || len(r.Paths) == 0 {
		return Verdict{Decision: DecideNone}
	}
	if len(r.Paths) > raftstore.MaxClaimPaths {
		r.Paths = r.Paths[:raftstore.MaxClaimPaths]
	}
	if len(r.Abs) != len(r.Paths) {
		r.Abs = nil
	}
	held, need := d.scan(r)
	if len(held) > 0 {
		held, need = d.releaseEnded(ctx, r, held, need)
	}
	if len(held) == 0 && len(need) > 0 {
		wctx, cancel := context.WithTimeout(ctx, d.cfg.Budget)
		err := d.cfg.Writer.Write(wctx, raftstore.ClaimCmd(r.Session, d.cfg.Node, r.Repo, d.cfg.Clock.Now(), need...))
		cancel()
		if err != nil {
			d.addPending(r, need)
			if r.Phase != PhasePost {
				d.noteTaken(r, need)
			}
			return Verdict{Decision: DecideAllow, Diagnostic: fmt.Sprintf("claims: the claim on %s was not recorded yet (%s); the write was allowed, the claim shows pending and is retried until it lands or the session ends",
				text.Clip(strings.Join(need, ", "), 200), text.OneLine(err.Error()))}
		}
		if r.Phase != PhasePost { // after the write there is no denial to come
			d.noteTaken(r, need)
		}
		held, _ = d.scan(r) // a race lost in the log shows here
	} else if len(held) == 0 && r.Phase != PhasePost {
		d.noteTaken(r, nil) // held already: it takes nothing, but it writes them
	}
	if len(held) == 0 {
		return Verdict{Decision: DecideAllow}
	}
	hs := make([]Holder, 0, len(held))
	for _, c := range held {
		h := d.cfg.Describe.Describe(c.SessionID, c.Node)
		h.Path, h.Session = c.Path, c.SessionID
		if h.Node == "" {
			h.Node = c.Node
		}
		hs = append(hs, h)
	}
	v := Verdict{Decision: DecideDeny, Holders: hs, Reason: Reason(r.Repo, hs, d.cfg.Mode == ModeWarn || r.Phase == PhasePost)}
	if d.cfg.Mode == ModeWarn || r.Phase == PhasePost {
		v.Decision = DecideWarn
	}
	return v
}

// releaseEnded releases the claims of ended holders and returns the rest;
// the paths they held are needed again.
func (d *Decider) releaseEnded(ctx context.Context, r Request, held []raftstore.Claim, need []string) ([]raftstore.Claim, []string) {
	live := held[:0:0]
	for _, c := range held {
		if !d.cfg.Describe.Describe(c.SessionID, c.Node).Ended {
			live = append(live, c)
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, d.cfg.Budget)
		err := d.cfg.Writer.Write(wctx, raftstore.ReleaseCmd(c.SessionID, "", true))
		cancel()
		if err != nil {
			live = append(live, c) // still recorded: it holds until released
			continue
		}
		need = append(need, c.Path)
	}
	return live, need
}

// scan splits the request's paths into claims held by other sessions and
// paths this session does not hold yet.
func (d *Decider) scan(r Request) (held []raftstore.Claim, need []string) {
	for _, p := range r.Paths {
		c, ok := d.cfg.Table.ClaimOf(r.Repo, p)
		switch {
		case !ok:
			need = append(need, p)
		case c.SessionID != r.Session:
			held = append(held, c)
		}
	}
	return held, need
}

// maxReason bounds a denial's text as the agent sees it.
const maxReason = 600

// Reason words a conflict for the agent: who holds which path, where, on
// what task, and how to go on.
func Reason(repo string, hs []Holder, warnOnly bool) string {
	var b strings.Builder
	if warnOnly {
		b.WriteString("harn (warning): ")
	} else {
		b.WriteString("harn: write refused: ")
	}
	for i, h := range hs {
		if i > 0 {
			b.WriteString("; ")
		}
		who := text.Clip(text.OneLine(h.Name), 40)
		if who == "" {
			who = "session " + text.Clip(text.OneLine(h.Session), 40)
		}
		fmt.Fprintf(&b, "%s is claimed by %s", text.Clip(text.OneLine(h.Path), 120), who)
		if h.Agent != "" {
			fmt.Fprintf(&b, " (%s)", text.Clip(text.OneLine(h.Agent), 20))
		}
		if h.Node != "" {
			fmt.Fprintf(&b, " on node %s", text.Clip(text.OneLine(h.Node), 40))
		}
		if h.Task != "" {
			fmt.Fprintf(&b, ", task %q", text.Clip(text.OneLine(h.Task), 80))
		}
		if h.Unreachable {
			b.WriteString(" (that node is unreachable now; the claim still holds)")
		}
	}
	fmt.Fprintf(&b, " in %s. ", text.Clip(text.OneLine(repo), 80))
	if warnOnly {
		b.WriteString("Coordinate with the holder before changing it.")
	} else {
		fmt.Fprintf(&b, "Wait for it, ask the holder, or have the operator run `harn agents release-claim --session %s`.",
			text.Clip(text.OneLine(hs[0].Session), 64))
	}
	return text.Clip(b.String(), maxReason)
}

// Local is a claim table for a node without the mesh: a registry applied
// in memory, in call order. Claims then hold among this node's sessions
// and end with the node.
type Local struct {
	mu  sync.Mutex
	reg *raftstore.Registry
	idx uint64
}

// NewLocal returns an empty local table.
func NewLocal() *Local { return &Local{reg: raftstore.NewRegistry()} }

// ClaimOf reads the table.
func (l *Local) ClaimOf(repo, path string) (raftstore.Claim, bool) { return l.reg.ClaimOf(repo, path) }

// Registry is the table's registry (reads).
func (l *Local) Registry() *raftstore.Registry { return l.reg }

// Write applies cmd.
func (l *Local) Write(_ context.Context, cmd raftstore.Command) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.idx++
	return l.reg.Apply(l.idx, cmd)
}
