package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/harn-dev/harn/runtime"
)

// Discovery bounds.
const (
	maxListed       = 200
	maxFound        = 50
	maxEntryDescLen = 200
)

type nameArgs struct {
	Name string `json:"name"`
}

type listArgs struct {
	Kind  string `json:"kind"`
	Query string `json:"query"`
}

// entry is one compact line of discovery.
type entry struct {
	Name        string `json:"name"`
	Kind        string `json:"kind"`
	Description string `json:"description,omitempty"`
}

func (b *Toolbox) runDiscovery(c Call) (string, error) {
	switch c.Name {
	case ToolList, ToolSearch:
		var a listArgs
		if err := decodeArgs(c.Args, &a); err != nil {
			return "", err
		}
		if c.Name == ToolList && a.Query != "" {
			return "", fmt.Errorf("%w: capabilities_list takes no query; use capabilities_search", ErrBadArgs)
		}
		if c.Name == ToolSearch && strings.TrimSpace(a.Query) == "" {
			return "", fmt.Errorf("%w: capabilities_search needs a query", ErrBadArgs)
		}
		if a.Kind != "" && a.Kind != "tool" && a.Kind != "skill" {
			return "", fmt.Errorf("%w: kind is tool or skill", ErrBadArgs)
		}
		return b.discover(c.Task, a)
	}
	var a nameArgs
	if err := decodeArgs(c.Args, &a); err != nil {
		return "", err
	}
	if a.Name == "" {
		return "", fmt.Errorf("%w: %s needs a name", ErrBadArgs, c.Name)
	}
	switch c.Name {
	case ToolInsp:
		return b.inspect(c.Task, a.Name)
	case ToolLoad:
		return b.load(c.Task, a.Name)
	default:
		return b.activate(c.Task, a.Name)
	}
}

// discover lists (or searches) what the task may discover: the runtime's
// Discover, which filters by the task's grants and the global overrides.
func (b *Toolbox) discover(task string, a listArgs) (string, error) {
	es, err := b.rt.Discover(task)
	if err != nil {
		return "", err
	}
	words := strings.Fields(strings.ToLower(a.Query))
	limit := maxListed
	if len(words) > 0 {
		limit = maxFound
	}
	out := []entry{}
	more := 0
	for _, e := range es {
		if a.Kind != "" && e.Kind.String() != a.Kind {
			continue
		}
		if !matchesAll(strings.ToLower(e.Name+" "+e.Description), words) {
			continue
		}
		if len(out) == limit {
			more++
			continue
		}
		d := e.Description
		if len(d) > maxEntryDescLen {
			d = bound(d, maxEntryDescLen)
		}
		out = append(out, entry{Name: e.Name, Kind: e.Kind.String(), Description: d})
	}
	raw, _ := json.Marshal(out)
	s := string(raw)
	if more > 0 {
		s += fmt.Sprintf("\n[%d more; narrow with capabilities_search]", more)
	}
	return s, nil
}

func matchesAll(s string, words []string) bool {
	for _, w := range words {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}

// contract is what capabilities_inspect answers.
type contract struct {
	Name        string          `json:"name"`
	Kind        string          `json:"kind"`
	Description string          `json:"description,omitempty"`
	Provider    string          `json:"provider"`
	Hash        string          `json:"contract_hash,omitempty"`
	Mutating    bool            `json:"mutating,omitempty"`
	Tokens      int             `json:"tokens"`
	Loaded      bool            `json:"loaded,omitempty"`
	Generation  uint64          `json:"generation"`
	Schema      json.RawMessage `json:"schema,omitempty"`
}

// schemaOf finds the schema behind a tool's contract now, and checks it
// is the one the task's snapshot hashed.
func (b *Toolbox) schemaOf(c runtime.Capability) (json.RawMessage, error) {
	if bt, ok := builtinByName[c.Name]; ok {
		return bt.spec.Schema, nil
	}
	conn, t, ok := b.mcpTool(c.Name)
	if !ok {
		return nil, fmt.Errorf("%w: %s is no longer offered by its server", ErrContractChanged, c.Name)
	}
	if t.hash != c.ContractHash || conn.provider != c.Provider {
		return nil, fmt.Errorf("%w: %s changed since this task started (snapshot %s from %s, now %s from %s); it cannot be called in this task",
			ErrContractChanged, c.Name, short(c.ContractHash), c.Provider, short(t.hash), conn.provider)
	}
	return t.schema, nil
}

func (b *Toolbox) inspect(task, name string) (string, error) {
	k, err := b.rt.Inspect(task, name)
	if err != nil {
		return "", err
	}
	out := contract{Name: k.Name, Kind: k.Kind.String(), Description: k.Description, Provider: k.Provider,
		Hash: k.ContractHash, Mutating: k.Kind == runtime.KindTool && !k.ReadOnly, Tokens: k.Tokens, Generation: k.Generation, Loaded: k.Core}
	if k.Kind == runtime.KindTool {
		s, err := b.schemaOf(k.Capability)
		if err != nil {
			return "", err
		}
		if Hash(s) != k.ContractHash {
			return "", fmt.Errorf("%w: %s: its schema does not hash to its contract", ErrContractChanged, name)
		}
		out.Schema = s
		if !out.Loaded {
			out.Loaded = b.isLoaded(task, name)
		}
	} else {
		b.mu.Lock()
		sk, ok := b.skills[name]
		b.mu.Unlock()
		if !ok || sk.Hash != k.ContractHash {
			return "", fmt.Errorf("%w: skill %s changed since this task started", ErrContractChanged, name)
		}
	}
	raw, _ := json.Marshal(out)
	return string(raw), nil
}

func (b *Toolbox) isLoaded(task, name string) bool {
	ts := b.state(task)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, l := range ts.loaded {
		if l.name == name {
			return true
		}
	}
	return false
}

// admission renders a refusal to admit: the need, the margin and the
// ceiling, for the model to act on.
func admission(err error) (string, error) {
	var ae *runtime.AdmissionError
	if !errors.As(err, &ae) {
		return "", err
	}
	raw, _ := json.Marshal(map[string]any{"admitted": false, "item": ae.Item, "need": ae.Need, "active": ae.Active,
		"base": ae.Base, "margin": ae.Margin, "ceiling": ae.Ceiling})
	return string(raw), err
}

func (b *Toolbox) load(task, name string) (string, error) {
	k, err := b.rt.Load(task, name)
	if err != nil {
		return admission(err)
	}
	if k.Kind == runtime.KindTool && !k.Core {
		if _, err := b.schemaOf(k.Capability); err != nil {
			_ = b.rt.Unload(task, name)
			return "", err
		}
		ts := b.state(task)
		b.mu.Lock()
		found := false
		for _, l := range ts.loaded {
			found = found || l.name == name
		}
		if !found {
			ts.loaded = append(ts.loaded, loadedTool{name: name, hash: k.ContractHash, provider: k.Provider})
		}
		b.mu.Unlock()
	}
	raw, _ := json.Marshal(map[string]any{"admitted": true, "name": k.Name, "tokens": k.Tokens, "generation": k.Generation,
		"note": "callable from the next request on"})
	return string(raw), nil
}

func (b *Toolbox) activate(task, name string) (string, error) {
	a, err := b.rt.Activate(task, name, false)
	if err != nil {
		return admission(err)
	}
	if a.Scope == "step" {
		ts := b.state(task)
		b.mu.Lock()
		ts.fresh[name] = true
		b.mu.Unlock()
	}
	raw, _ := json.Marshal(map[string]any{"activated": name, "scope": a.Scope,
		"note": "its instructions are in the context of the next step"})
	return string(raw), nil
}

// Prompt activates, for the whole task, the skills a user prompt names as
// /name (a word starting with / that names a known skill; other words are
// left alone, so /usr/bin is not one). It returns a status line per skill:
// active, skipped because it does not fit the budget, or refused.
func (b *Toolbox) Prompt(session, task, text string) []string {
	var out []string
	b.mu.Lock()
	known := func(n string) bool { _, ok := b.skills[n]; return ok }
	refs := skillRefs(text, known)
	b.mu.Unlock()
	for _, n := range refs {
		a, err := b.rt.Activate(task, n, true)
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("skill %s not activated: %v", n, err))
		case a.Skipped:
			out = append(out, a.Message)
		default:
			out = append(out, fmt.Sprintf("skill %s active for this task", n))
		}
	}
	return out
}

// Instructions are the bodies of the task's active skills: those
// activated with /name first, then those the model activated, each in name
// order, as the runtime's capability context lists them.
//
// When a loaded MCP tool was withdrawn because its server changed it,
// a last text says so, for the rest of the task.
func (b *Toolbox) Instructions(session, task string) []string {
	cv, err := b.rt.Context(task)
	if err != nil {
		return nil
	}
	b.reconcile(task)
	ts := b.state(task)
	var out []string
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, n := range append(cv.TaskSkills, cv.StepSkills...) {
		if s, ok := b.skills[n]; ok {
			out = append(out, "# Skill: "+s.Name+"\n\n"+s.Body)
		}
	}
	if len(ts.withdrawn) > 0 {
		out = append(out, "# Tools withdrawn\n\n"+strings.Join(ts.withdrawn, "\n"))
	}
	return out
}

// EndStep ends a model step. A skill the model activated during a step
// joins the context of the next request and leaves at the end of that
// step: it lasts one step of the model's. EndStep calls the runtime's
// EndStep itself; a loop that also calls runtime.EndStep must do so
// before, not after.
func (b *Toolbox) EndStep(session, task string) {
	if _, err := b.rt.EndStep(task); err != nil {
		return
	}
	ts := b.state(task)
	b.mu.Lock()
	fresh := ts.fresh
	ts.fresh = map[string]bool{}
	b.mu.Unlock()
	for n := range fresh {
		if _, err := b.rt.Activate(task, n, false); err != nil {
			b.log.Warn("skill left the context early", "task", task, "skill", n, "err", err)
		}
	}
}
