package runtime

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"
)

// CallRequest is one capability call, as the executor is about to make it.
// ID is the agent's own call id when it has one (Claude Code's
// tool_use_id), so a later report can name it; the runtime makes one
// otherwise. Input is the raw JSON input: the ledger keeps only its keyed
// digest, and input patterns match its subject (Subject overrides the one
// SubjectOf finds). Generation and ContractHash are what the executor got
// from Load or Inspect; the harn agent loop states both, a hook neither.
type CallRequest struct {
	ID           string
	Capability   string
	Input        []byte
	Subject      string
	Generation   uint64
	ContractHash string
}

// Decision is a call's passed check: whether it must wait for a
// confirmation, and whether it only reads.
type Decision struct {
	Capability string `json:"capability"`
	Confirm    bool   `json:"confirm,omitempty"`
	ReadOnly   bool   `json:"read_only,omitempty"`
}

// Outcome is how a call settled.
type Outcome string

// The outcomes.
const (
	OutcomeSucceeded Outcome = "succeeded"
	OutcomeFailed    Outcome = "failed"
	OutcomeAborted   Outcome = "aborted"         // it acknowledged the abort signal
	OutcomeUnknown   Outcome = "outcome_unknown" // the grace period passed first
	OutcomeDenied    Outcome = "denied"          // it waited for a confirmation and was denied
)

// CallCounts counts a task's calls by how they ended.
type CallCounts struct {
	Started   int `json:"started"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Aborted   int `json:"aborted"`
	Unknown   int `json:"outcome_unknown"`
	Refused   int `json:"refused"`
	Denied    int `json:"denied"`
}

func (c *CallCounts) add(o Outcome) {
	switch o {
	case OutcomeSucceeded:
		c.Succeeded++
	case OutcomeFailed:
		c.Failed++
	case OutcomeAborted:
		c.Aborted++
	case OutcomeUnknown:
		c.Unknown++
	case OutcomeDenied:
		c.Denied++
	}
}

// call is a call's runtime state, guarded by its session's mu.
type call struct {
	id       string
	req      CallRequest // Input cleared once digested; Subject kept for the re-check
	input    string      // the keyed digest of the raw input
	refusal  error       // a call refused at Begin: the first answer to a repeat
	capName  string
	readOnly bool
	pending  bool // waits for a confirmation
	started  bool
	settled  bool
	outcome  Outcome
	ctx      context.Context
	cancel   context.CancelFunc
	decided  chan struct{}
	answered bool
	yes      bool
	by       string
	reason   string
	at       time.Time
}

// Call is the executor's handle on a call that passed its checks.
type Call struct {
	ID         string
	Task       string
	Capability string
	// Pending says the call must Wait for a confirmation before it runs.
	Pending bool
	// ConfirmedBy names who confirmed it (Prior of a confirmed call).
	ConfirmedBy string
	rt          *Runtime
	c           *call
}

// Context is cancelled when the call must abort (the task is cancelled or
// finished under it); the call then reports End or AckAbort.
func (c *Call) Context() context.Context { return c.c.ctx }

// Wait waits for the confirmation of a pending call: nil once confirmed
// (or at once for a call that needed none), a *DeniedError after Deny or a
// cancellation, ctx's error when ctx ends first.
func (c *Call) Wait(ctx context.Context) error {
	if !c.Pending {
		return nil
	}
	select {
	case <-c.c.decided:
	case <-ctx.Done():
		return ctx.Err()
	}
	t, err := c.rt.lock(c.Task)
	if err != nil {
		return err
	}
	defer t.s.mu.Unlock()
	if !c.c.yes {
		return &DeniedError{Call: c.ID, By: c.c.by, Reason: c.c.reason}
	}
	return nil
}

// End reports the call's outcome (succeeded, failed or aborted) with its
// raw output, which the ledger keeps only as a keyed digest.
func (c *Call) End(o Outcome, output []byte) error { return c.rt.End(c.Task, c.ID, o, output) }

// Check runs the pre-call checks for req in a task without starting
// anything: task state, catalog snapshot, global revocation, catalog
// generation, contract hash, provider binding, disabled provider, kind,
// grant (with the input pattern), load state, and the hold on mutations
// after an unknown outcome. A refusal is a *RefusalError naming the check.
func (rt *Runtime) Check(taskID string, req CallRequest) (Decision, error) {
	t, err := rt.lock(taskID)
	if err != nil {
		return Decision{}, err
	}
	defer t.s.mu.Unlock()
	c, confirm, err := rt.checkLocked(t, &req)
	if err != nil {
		return Decision{}, err
	}
	return Decision{Capability: req.Capability, Confirm: confirm, ReadOnly: c.ReadOnly}, nil
}

func (rt *Runtime) checkLocked(t *task, req *CallRequest) (Capability, bool, error) {
	name := req.Capability
	switch t.state {
	case StateRunning:
	case StateCancelling, StateQuiescing:
		return Capability{}, false, &RefusalError{Check: CheckTask, Capability: name, Detail: t.cancelledError().Error(), Err: t.cancelledError()}
	case StateTerminal:
		if t.wasCancelled() {
			return Capability{}, false, &RefusalError{Check: CheckTask, Capability: name, Detail: t.cancelledError().Error(), Err: t.cancelledError()}
		}
		return Capability{}, false, refuse(CheckTask, name, ErrTaskTerminal, "task %s is %s", t.id, t.status)
	default:
		return Capability{}, false, refuse(CheckTask, name, ErrTaskNotRunning, "task %s is %s", t.id, t.state)
	}
	c, ok := t.snap.lookup(name)
	if !ok {
		return c, false, refuse(CheckCatalog, name, ErrUnknownCapability, "not in generation %d of catalog %q", t.snap.gen, t.snap.name)
	}
	g := rt.global.Load()
	if g.isRevoked(name) {
		return c, false, refuse(CheckRevocation, name, ErrRevoked, "revoked for every task")
	}
	if req.Generation != 0 && req.Generation != t.snap.gen {
		return c, false, refuse(CheckGeneration, name, ErrGeneration, "call states %d, the task's snapshot is %d", req.Generation, t.snap.gen)
	}
	_, loaded := t.loaded[name]
	unloaded := !loaded && !c.Core
	// A tool the task has not loaded is not in the loop's tools, so its
	// call states no contract: it is answered by the load check below
	// (load it first), not as a contract mismatch.
	if req.ContractHash != c.ContractHash && !(unloaded && req.ContractHash == "") {
		return c, false, refuse(CheckContract, name, ErrContractHash, "call states %q, the snapshot has %q", req.ContractHash, c.ContractHash)
	}
	if c.Provider == "" {
		return c, false, refuse(CheckBinding, name, ErrUnbound, "no provider")
	}
	if g.isOff(c.Provider) {
		return c, false, refuse(CheckProvider, name, ErrProviderDisabled, "provider %q is disabled", c.Provider)
	}
	if c.Kind != KindTool {
		return c, false, refuse(CheckKind, name, ErrWrongKind, "a skill is activated, not called")
	}
	if req.Subject == "" {
		// Kept with the call (its raw input is not): the re-check at
		// Confirm matches the same command or path.
		req.Subject = SubjectOf(c.Subject, req.Input)
	}
	lvl, confirm := ceiling(t.grants, t.limits, &c, req.Subject, modeCall, t.s.cfg.Workdir)
	if lvl < Execute {
		return c, false, refuse(CheckGrant, name, ErrNotGranted, "the task holds %s for this input; a call needs execute", lvl)
	}
	if c.Guarded && c.Subject == SubjectPath {
		if p, ok := protectedSubject(req.Subject, t.s.cfg.Workdir); ok {
			if !namesPath(t.grants, &c, req.Subject, t.s.cfg.Workdir) {
				return c, false, refuse(CheckProtected, name, ErrProtectedPath,
					"%s is under %s, which no profile or pattern opens; a grant naming the path asks for a confirmation: `execute %s(%s) confirm`",
					req.Subject, p, name, req.Subject)
			}
			confirm = true
		}
	}
	if unloaded {
		return c, false, refuse(CheckLoad, name, ErrNotLoaded, "%s", LoadFirst(name))
	}
	if !c.ReadOnly && len(t.s.holds) > 0 {
		h := t.s.holds[0]
		// The detail names the task to acknowledge: a hook's agent sees
		// only this text, not the error.
		return c, false, &RefusalError{Check: CheckAck, Capability: name,
			Detail: fmt.Sprintf("call %s (%s) of task %s ended with an unknown outcome; mutations wait for `harn task ack %s`", h.call, h.capability, h.task, h.task),
			Err:    &AckRequiredError{Task: h.task, Call: h.call, Capability: h.capability}}
	}
	return c, confirm, nil
}

// LoadFirst is what a call of a discovered but unloaded tool is answered
// with: the call to make before it.
func LoadFirst(name string) string {
	return fmt.Sprintf(`load it first with tools_load {"name":%q}; it is callable from the next request on`, name)
}

// Begin checks a call and, when it passes, records it and starts it (or,
// when its grant asks for a confirmation, registers it as pending: the
// executor then Waits). A refusal is recorded too.
func (rt *Runtime) Begin(taskID string, req CallRequest) (*Call, error) {
	if len(req.Input) > MaxInputBytes || len(req.ID) > maxNameBytes || len(req.Capability) > maxNameBytes {
		return nil, fmt.Errorf("%w: call input over %d bytes or id/name over %d", ErrTooLarge, MaxInputBytes, maxNameBytes)
	}
	t, err := rt.lock(taskID)
	if err != nil {
		return nil, err
	}
	s := t.s
	defer s.mu.Unlock()
	in := rt.dig.Digest(req.Input)
	c, confirm, err := rt.checkLocked(t, &req)
	if err != nil {
		var re *RefusalError
		check := ""
		if errors.As(err, &re) {
			check = string(re.Check)
		}
		if req.ID != "" && t.calls[req.ID] != nil {
			return nil, fmt.Errorf("%w: %s", ErrDuplicateCall, req.ID)
		}
		t.refused(req.Capability, check)
		rt.recLog(t, Record{Kind: RecRefused, Call: req.ID, Capability: req.Capability, Status: check, Input: in})
		if req.ID != "" && t.calls != nil {
			// A repeat of the same agent call id gets this refusal again.
			rc := &call{id: req.ID, capName: req.Capability, input: in, settled: true,
				outcome: outcomeRefused, refusal: err, decided: make(chan struct{}), cancel: func() {}}
			close(rc.decided)
			t.calls[req.ID] = rc
			rt.remember(t, req.ID)
		}
		return nil, err
	}
	id := req.ID
	if id == "" {
		t.nextCall++
		id = "c" + strconv.Itoa(t.nextCall)
		for t.calls[id] != nil {
			t.nextCall++
			id = "c" + strconv.Itoa(t.nextCall)
		}
	} else if t.calls[id] != nil {
		return nil, fmt.Errorf("%w: %s", ErrDuplicateCall, id)
	}
	status := "running"
	if confirm {
		status = "pending"
	}
	if err := rt.rec(t, Record{Kind: RecBegin, Call: id, Capability: c.Name, Status: status, Input: in, ReadOnly: c.ReadOnly}); err != nil {
		return nil, err
	}
	req.Input = nil
	cl := &call{id: id, req: req, input: in, capName: c.Name, readOnly: c.ReadOnly, pending: confirm, decided: make(chan struct{})}
	cl.ctx, cl.cancel = context.WithCancel(t.ctx)
	t.calls[id] = cl
	if !confirm {
		rt.startCall(t, cl)
	}
	s.signal()
	return &Call{ID: id, Task: t.id, Capability: c.Name, Pending: confirm, rt: rt, c: cl}, nil
}

func (rt *Runtime) startCall(t *task, c *call) {
	c.started = true
	t.open++
	t.counts.Started++
	t.perCap[c.capName]++
}

// settleCall ends a call with an outcome and releases its context.
func (rt *Runtime) settleCall(t *task, c *call, o Outcome, out string) {
	c.settled, c.outcome = true, o
	if c.started {
		t.open--
	}
	t.counts.add(o)
	c.cancel()
	rt.remember(t, c.id)
	if o == OutcomeUnknown && !c.readOnly {
		t.s.holds = append(t.s.holds, hold{task: t.id, call: c.id, capability: c.capName})
	}
	rt.recLog(t, Record{Kind: RecEnd, Call: c.id, Capability: c.capName, Status: string(o), Output: out, ReadOnly: c.readOnly})
}

// remember keeps a settled call for answers and repeats, forgetting the
// oldest beyond maxSettled.
func (rt *Runtime) remember(t *task, id string) {
	t.settled = append(t.settled, id)
	if len(t.settled) > maxSettled {
		delete(t.calls, t.settled[0])
		t.settled = t.settled[1:]
	}
}

// outcomeRefused marks a remembered refusal; it is never reported.
const outcomeRefused Outcome = "refused"

// Prior returns the first decision on a call id the task has seen: a
// handle to the call (Pending while it still waits for a confirmation:
// Wait on it), or the error it was refused or denied with. An agent that
// runs its pre-call hook again for the same call gets this, never a fresh
// decision. ErrNoCall when the id is unknown (or long forgotten).
func (rt *Runtime) Prior(taskID, callID string) (*Call, error) {
	t, err := rt.lock(taskID)
	if err != nil {
		return nil, err
	}
	defer t.s.mu.Unlock()
	c, err := rt.findCall(t, callID)
	if err != nil {
		return nil, err
	}
	switch {
	case c.refusal != nil:
		return nil, c.refusal
	case c.answered && !c.yes:
		return nil, &DeniedError{Call: c.id, By: c.by, Reason: c.reason}
	case c.settled && !c.started:
		return nil, &DeniedError{Call: c.id, By: "runtime", Reason: string(c.outcome)}
	}
	cl := &Call{ID: c.id, Task: t.id, Capability: c.capName, Pending: c.pending, rt: rt, c: c}
	if c.answered && c.yes {
		cl.ConfirmedBy = c.by
	}
	return cl, nil
}

func (rt *Runtime) findCall(t *task, id string) (*call, error) {
	c := t.calls[id]
	if c == nil {
		return nil, fmt.Errorf("%w: %s in %s", ErrNoCall, id, t.id)
	}
	return c, nil
}

// Confirm answers a pending call with yes. It adds no authority: the call
// is checked again first (a reduction or revocation since it asked wins,
// and the call is then denied).
func (rt *Runtime) Confirm(taskID, callID, by string) error {
	if err := checkAnswer(by, ""); err != nil {
		return err
	}
	t, err := rt.lock(taskID)
	if err != nil {
		return err
	}
	s := t.s
	defer s.mu.Unlock()
	c, err := rt.findCall(t, callID)
	if err != nil {
		return err
	}
	if err := answerable(c); err != nil {
		return err
	}
	req := c.req
	if _, _, err := rt.checkLocked(t, &req); err != nil {
		rt.answer(t, c, false, "runtime", "re-check at confirmation: "+err.Error())
		return err
	}
	if err := rt.rec(t, Record{Kind: RecConfirm, Call: c.id, Capability: c.capName, By: by, Input: c.input}); err != nil {
		return err
	}
	c.answered, c.yes, c.by, c.at = true, true, by, rt.clock.Now()
	c.pending = false
	rt.startCall(t, c)
	close(c.decided)
	s.signal()
	return nil
}

// Deny answers a pending call with no.
func (rt *Runtime) Deny(taskID, callID, by, reason string) error {
	if err := checkAnswer(by, reason); err != nil {
		return err
	}
	t, err := rt.lock(taskID)
	if err != nil {
		return err
	}
	defer t.s.mu.Unlock()
	c, err := rt.findCall(t, callID)
	if err != nil {
		return err
	}
	if err := answerable(c); err != nil {
		return err
	}
	rt.answer(t, c, false, by, reason)
	rt.settleLocked(t)
	return nil
}

func answerable(c *call) error {
	if c.answered {
		return &AnswerError{Call: c.id, Confirmed: c.yes, By: c.by, At: c.at, Reason: c.reason}
	}
	if !c.pending || c.settled {
		return fmt.Errorf("%w: %s", ErrNotPending, c.id)
	}
	return nil
}

// answer denies a pending call (by an operator, or by the runtime when the
// task is cancelled or a re-check fails).
func (rt *Runtime) answer(t *task, c *call, yes bool, by, reason string) {
	rt.recLog(t, Record{Kind: RecDeny, Call: c.id, Capability: c.capName, By: by, Reason: reason})
	c.answered, c.yes, c.by, c.reason, c.at = true, yes, by, reason, rt.clock.Now()
	c.pending = false
	rt.settleCall(t, c, OutcomeDenied, "")
	close(c.decided)
	t.s.signal()
}

// End reports a started call's outcome: succeeded, failed, aborted (it
// acknowledged the abort signal), or outcome_unknown (the executor lost
// track of what the call started: a process outlived the call's kill), which
// holds later mutations until Ack as the barrier's does. A call the grace
// period already settled as outcome_unknown stays so (ErrCallSettled).
func (rt *Runtime) End(taskID, callID string, o Outcome, output []byte) error {
	if o != OutcomeSucceeded && o != OutcomeFailed && o != OutcomeAborted && o != OutcomeUnknown {
		return fmt.Errorf("%w: outcome %q; report succeeded, failed, aborted or outcome_unknown", ErrBadConfig, o)
	}
	if len(output) > MaxInputBytes {
		return fmt.Errorf("%w: output of %d bytes", ErrTooLarge, len(output))
	}
	t, err := rt.lock(taskID)
	if err != nil {
		return err
	}
	defer t.s.mu.Unlock()
	c, err := rt.findCall(t, callID)
	if err != nil {
		return err
	}
	switch {
	case c.settled:
		return fmt.Errorf("%w: %s is %s", ErrCallSettled, c.id, c.outcome)
	case !c.started:
		return fmt.Errorf("%w: %s waits for a confirmation", ErrNotPending, c.id)
	}
	rt.settleCall(t, c, o, rt.dig.Digest(output))
	rt.settleLocked(t)
	t.s.signal()
	return nil
}

// AckAbort reports that a call stopped on its abort signal.
func (rt *Runtime) AckAbort(taskID, callID string) error {
	return rt.End(taskID, callID, OutcomeAborted, nil)
}

func sortStrings(s []string) { sort.Strings(s) }
