package runtime

import (
	"fmt"
	"sort"
)

// Budget is a model's input budget for admission, in tokens. The ceiling is
// CeilingPercent (default 80) of the usable input budget; the margin is
// MarginPercent (default 5) of the ceiling; Base is the minimal model base:
// the system prompt and the core tools' schemas, as a request carries them.
// Core tools are loaded when a task starts and are not charged again to its
// active tokens: only what tools_load and skills add is. A zero UsableInput
// turns admission off (an external agent manages its own context).
type Budget struct {
	UsableInput    int `json:"usable_input"`
	CeilingPercent int `json:"ceiling_percent,omitempty"`
	Base           int `json:"base"`
	MarginPercent  int `json:"margin_percent,omitempty"`
}

func (b Budget) validate() error {
	if b.UsableInput < 0 || b.Base < 0 || b.CeilingPercent < 0 || b.CeilingPercent > 100 || b.MarginPercent < 0 || b.MarginPercent > 100 {
		return fmt.Errorf("%w: budget needs tokens >= 0 and percents in 0..100", ErrBadConfig)
	}
	return nil
}

// Ceiling is the admission ceiling in tokens.
func (b Budget) Ceiling() int {
	p := b.CeilingPercent
	if p == 0 {
		p = 80
	}
	return b.UsableInput * p / 100
}

// Margin is the safety margin in tokens.
func (b Budget) Margin() int {
	p := b.MarginPercent
	if p == 0 {
		p = 5
	}
	return b.Ceiling() * p / 100
}

// Admit admits an item of need tokens next to active tokens already
// admitted, or answers with an *AdmissionError carrying the need, the
// margin and the ceiling.
func (b Budget) Admit(item string, need, active int) error {
	if b.UsableInput == 0 {
		return nil
	}
	c, m := b.Ceiling(), b.Margin()
	if active+b.Base+need+m <= c {
		return nil
	}
	return &AdmissionError{Item: item, Need: need, Active: active, Base: b.Base, Margin: m, Ceiling: c}
}

// Contract is what Inspect and Load return: the capability's validated
// contract with the catalog generation a call must state.
type Contract struct {
	Capability
	Generation uint64 `json:"generation"`
}

// Entry is one line of discovery: compact metadata.
type Entry struct {
	Name        string `json:"name"`
	Kind        Kind   `json:"kind"`
	Description string `json:"description,omitempty"`
}

// capFor finds a capability in a running task's snapshot that is not
// overridden globally and that the task holds at least need of.
func (rt *Runtime) capFor(t *task, name string, kind Kind, need Level) (Capability, error) {
	if t.state != StateRunning {
		return Capability{}, refuse(CheckTask, name, ErrTaskNotRunning, "task %s is %s", t.id, t.state)
	}
	c, ok := t.snap.lookup(name)
	if !ok {
		return c, refuse(CheckCatalog, name, ErrUnknownCapability, "not in generation %d", t.snap.gen)
	}
	g := rt.global.Load()
	if g.isRevoked(name) {
		return c, refuse(CheckRevocation, name, ErrRevoked, "revoked for every task")
	}
	if c.Provider == "" {
		return c, refuse(CheckBinding, name, ErrUnbound, "no provider")
	}
	if g.isOff(c.Provider) {
		return c, refuse(CheckProvider, name, ErrProviderDisabled, "provider %q is disabled", c.Provider)
	}
	if c.Kind != kind {
		return c, refuse(CheckKind, name, ErrWrongKind, "%s is a %s", name, c.Kind)
	}
	if lvl, _ := ceiling(t.grants, t.limits, &c, "", modeNoCall, t.s.cfg.Workdir); lvl < need {
		return c, refuse(CheckGrant, name, ErrNotGranted, "the task holds %s; this needs %s", lvl.nameFor(c.Kind), need.nameFor(c.Kind))
	}
	return c, nil
}

// Discover lists what the task may discover.
func (rt *Runtime) Discover(taskID string) ([]Entry, error) {
	t, err := rt.lock(taskID)
	if err != nil {
		return nil, err
	}
	defer t.s.mu.Unlock()
	if t.state != StateRunning {
		return nil, fmt.Errorf("%w: %s is %s", ErrTaskNotRunning, t.id, t.state)
	}
	out := []Entry{}
	for _, n := range discoverable(rt.global.Load(), t) {
		c, _ := t.snap.lookup(n)
		out = append(out, Entry{Name: c.Name, Kind: c.Kind, Description: c.Description})
	}
	return out, nil
}

// discoverable lists, sorted, the snapshot names the task may discover:
// a revoked capability, or one whose provider is disabled, is not.
func discoverable(g *global, t *task) []string {
	var out []string
	for i := range t.snap.list {
		c := &t.snap.list[i]
		if g.isRevoked(c.Name) || g.isOff(c.Provider) {
			continue
		}
		if lvl, _ := ceiling(t.grants, t.limits, c, "", modeNoCall, t.s.cfg.Workdir); lvl >= Discover {
			out = append(out, c.Name)
		}
	}
	sort.Strings(out)
	return out
}

// Inspect returns one capability's contract.
func (rt *Runtime) Inspect(taskID, name string) (Contract, error) {
	t, err := rt.lock(taskID)
	if err != nil {
		return Contract{}, err
	}
	defer t.s.mu.Unlock()
	c, err := rt.capFor(t, name, kindOf(t, name), Inspect)
	if err != nil {
		return Contract{}, err
	}
	return Contract{Capability: c, Generation: t.snap.gen}, nil
}

func kindOf(t *task, name string) Kind {
	if c, ok := t.snap.lookup(name); ok {
		return c.Kind
	}
	return KindTool
}

// Load admits a tool's schema into the task's context; it stays until the
// task ends or Unload. An item that does not fit is answered with an
// *AdmissionError; nothing loaded is evicted to make room.
func (rt *Runtime) Load(taskID, name string) (Contract, error) {
	t, err := rt.lock(taskID)
	if err != nil {
		return Contract{}, err
	}
	defer t.s.mu.Unlock()
	c, err := rt.capFor(t, name, KindTool, Load)
	if err != nil {
		return Contract{}, err
	}
	if _, ok := t.loaded[name]; !ok {
		if err := t.s.cfg.Budget.Admit(name, c.Tokens, t.active); err != nil {
			return Contract{}, err
		}
		t.loaded[name] = c.Tokens
		t.active += c.Tokens
	}
	return Contract{Capability: c, Generation: t.snap.gen}, nil
}

// Activation is the answer to a skill activation.
type Activation struct {
	Name    string `json:"name"`
	Scope   string `json:"scope,omitempty"` // step or task
	Skipped bool   `json:"skipped,omitempty"`
	Message string `json:"message,omitempty"` // the status message of a skipped skill
}

// Activate admits a skill. A skill the model activates (direct false)
// lasts one model step; one activated directly with /name lasts until the
// task ends. A direct skill that does not fit is skipped with a status
// message, and the task goes on; a model's activation that does not fit is
// answered with an *AdmissionError.
func (rt *Runtime) Activate(taskID, name string, direct bool) (Activation, error) {
	t, err := rt.lock(taskID)
	if err != nil {
		return Activation{}, err
	}
	defer t.s.mu.Unlock()
	c, err := rt.capFor(t, name, KindSkill, Activate)
	if err != nil {
		return Activation{}, err
	}
	if _, ok := t.skillsTask[name]; ok {
		return Activation{Name: name, Scope: "task"}, nil
	}
	if tok, ok := t.skillsStep[name]; ok {
		if direct { // the same body, now kept for the task
			delete(t.skillsStep, name)
			t.skillsTask[name] = tok
			return Activation{Name: name, Scope: "task"}, nil
		}
		return Activation{Name: name, Scope: "step"}, nil
	}
	if err := t.s.cfg.Budget.Admit(name, c.Tokens, t.active); err != nil {
		if direct {
			return Activation{Name: name, Skipped: true, Message: "skill " + name + " skipped: " + err.Error()}, nil
		}
		return Activation{}, err
	}
	t.active += c.Tokens
	if direct {
		t.skillsTask[name] = c.Tokens
		return Activation{Name: name, Scope: "task"}, nil
	}
	t.skillsStep[name] = c.Tokens
	return Activation{Name: name, Scope: "step"}, nil
}

// EndStep ends a model step: the skills the model activated leave the
// context. It returns their names.
func (rt *Runtime) EndStep(taskID string) ([]string, error) {
	t, err := rt.lock(taskID)
	if err != nil {
		return nil, err
	}
	defer t.s.mu.Unlock()
	if t.state == StateQueued || t.state == StateBlocked {
		return nil, fmt.Errorf("%w: %s is %s", ErrTaskNotRunning, t.id, t.state)
	}
	var out []string
	for n, tok := range t.skillsStep {
		t.active -= tok
		out = append(out, n)
	}
	clear(t.skillsStep)
	sort.Strings(out)
	return out, nil
}

// Unload removes a loaded tool or an active skill, on request only.
func (rt *Runtime) Unload(taskID, name string) error {
	t, err := rt.lock(taskID)
	if err != nil {
		return err
	}
	defer t.s.mu.Unlock()
	for _, m := range []map[string]int{t.loaded, t.skillsTask, t.skillsStep} {
		if tok, ok := m[name]; ok {
			delete(m, name)
			t.active -= tok
			return nil
		}
	}
	return refuse(CheckLoad, name, ErrNotLoaded, "nothing to unload")
}

// ContextView is a task's capability context: what is loaded or active and
// what it costs.
type ContextView struct {
	Loaded     []string `json:"loaded"`
	TaskSkills []string `json:"task_skills"`
	StepSkills []string `json:"step_skills"`
	Active     int      `json:"active_tokens"`
	Ceiling    int      `json:"ceiling"`
	Margin     int      `json:"margin"`
	Base       int      `json:"base"`
}

// Context returns the task's capability context.
func (rt *Runtime) Context(taskID string) (ContextView, error) {
	t, err := rt.lock(taskID)
	if err != nil {
		return ContextView{}, err
	}
	defer t.s.mu.Unlock()
	b := t.s.cfg.Budget
	return ContextView{Loaded: keys(t.loaded), TaskSkills: keys(t.skillsTask), StepSkills: keys(t.skillsStep),
		Active: t.active, Ceiling: b.Ceiling(), Margin: b.Margin(), Base: b.Base}, nil
}

func keys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
