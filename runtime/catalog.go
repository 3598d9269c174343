package runtime

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Kind says whether a capability is a tool or a skill.
type Kind uint8

// The kinds.
const (
	KindTool Kind = iota
	KindSkill
)

func (k Kind) String() string {
	if k == KindSkill {
		return "skill"
	}
	return "tool"
}

// MarshalText writes "tool" or "skill".
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads "tool" or "skill".
func (k *Kind) UnmarshalText(b []byte) error {
	switch string(b) {
	case "tool", "":
		*k = KindTool
	case "skill":
		*k = KindSkill
	default:
		return fmt.Errorf("%w: kind %q; use tool or skill", ErrBadConfig, b)
	}
	return nil
}

// Subject says which part of a call's input an input pattern matches.
type Subject uint8

// The subjects.
const (
	SubjectNone    Subject = iota
	SubjectCommand         // input "command": a shell command line
	SubjectPath            // input "file_path", "notebook_path" or "path"
	SubjectText            // input "url", "query" or "pattern"
)

// Capability is one catalog entry: a tool or a skill, with the contract
// hash of its schema or body, its provider, whether it only reads, and its
// estimated size in tokens when loaded or active. Core tools are loaded
// when a task starts. A Name ending in * stands for every capability with
// that prefix (an external agent's `mcp__*`); exact names win.
type Capability struct {
	Name         string  `json:"name"`
	Kind         Kind    `json:"kind"`
	Description  string  `json:"description,omitempty"`
	ContractHash string  `json:"contract_hash,omitempty"`
	Provider     string  `json:"provider"`
	ReadOnly     bool    `json:"read_only,omitempty"`
	Tokens       int     `json:"tokens,omitempty"`
	Core         bool    `json:"core,omitempty"`
	Subject      Subject `json:"subject,omitempty"`
	// Guarded: a path tool whose calls on a protected path
	// (ProtectedPath) need a grant naming that path with confirm (harn's
	// own write and edit).
	Guarded bool `json:"guarded,omitempty"`
}

// catalog is one immutable generation of a named catalog.
type catalog struct {
	name   string
	gen    uint64
	byName map[string]*Capability
	wild   []*Capability // names ending in *, longest prefix first
	list   []Capability
}

func newCatalog(name string, gen uint64, caps []Capability) (*catalog, error) {
	c := &catalog{name: name, gen: gen, byName: make(map[string]*Capability, len(caps)), list: append([]Capability(nil), caps...)}
	for i := range c.list {
		p := &c.list[i]
		if !validName(p.Name) {
			return nil, fmt.Errorf("%w: capability name %q", ErrBadConfig, p.Name)
		}
		if p.Tokens < 0 {
			return nil, fmt.Errorf("%w: capability %q has negative tokens", ErrBadConfig, p.Name)
		}
		if _, dup := c.byName[p.Name]; dup {
			return nil, fmt.Errorf("%w: capability %q listed twice", ErrBadConfig, p.Name)
		}
		c.byName[p.Name] = p
		if strings.HasSuffix(p.Name, "*") {
			c.wild = append(c.wild, p)
		}
	}
	for i := 1; i < len(c.wild); i++ { // longest prefix first
		for j := i; j > 0 && len(c.wild[j].Name) > len(c.wild[j-1].Name); j-- {
			c.wild[j], c.wild[j-1] = c.wild[j-1], c.wild[j]
		}
	}
	return c, nil
}

// lookup finds a capability by its name; a call to `mcp__x__y` resolves to
// an entry `mcp__*` with its own name.
func (c *catalog) lookup(name string) (Capability, bool) {
	if p, ok := c.byName[name]; ok && !strings.HasSuffix(name, "*") {
		return *p, true
	}
	for _, p := range c.wild {
		if strings.HasPrefix(name, strings.TrimSuffix(p.Name, "*")) {
			q := *p
			q.Name = name
			return q, true
		}
	}
	return Capability{}, false
}

// SubjectOf extracts the input subject of a call from its raw JSON input:
// the "command" for a command subject; "file_path", "notebook_path" or
// "path" for a path; "url", "query" or "pattern" for text. Input that is
// not a JSON object, or lacks the field, has no subject (an input pattern
// then never matches).
func SubjectOf(s Subject, input []byte) string {
	if s == SubjectNone || len(input) == 0 || len(input) > MaxInputBytes {
		return ""
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(input, &m) != nil {
		return ""
	}
	var keys []string
	switch s {
	case SubjectCommand:
		keys = []string{"command"}
	case SubjectPath:
		keys = []string{"file_path", "notebook_path", "path"}
	case SubjectText:
		keys = []string{"url", "query", "pattern"}
	}
	for _, k := range keys {
		raw, ok := m[k]
		if !ok {
			continue
		}
		var v string
		if json.Unmarshal(raw, &v) == nil {
			return v
		}
		return ""
	}
	return ""
}

// global is the live state that overrides every task's snapshot: global
// revocations and disabled providers, with the current catalogs. It is
// immutable; writers swap in a new copy.
type global struct {
	catalogs map[string]*catalog
	revoked  []string // capability name patterns
	disabled map[string]bool
}

func (g *global) isRevoked(name string) bool {
	for _, p := range g.revoked {
		if nameMatch(p, name) {
			return true
		}
	}
	return false
}

// isOff says whether a provider is disabled: by its own name, or, for
// one of harn's MCP servers (mcp:NAME), by "mcp", the provider of every
// MCP tool.
func (g *global) isOff(provider string) bool {
	return g.disabled[provider] || (strings.HasPrefix(provider, "mcp:") && g.disabled["mcp"])
}

func (g *global) clone() *global {
	n := &global{catalogs: make(map[string]*catalog, len(g.catalogs)), revoked: append([]string(nil), g.revoked...), disabled: make(map[string]bool, len(g.disabled))}
	for k, v := range g.catalogs {
		n.catalogs[k] = v
	}
	for k, v := range g.disabled {
		n.disabled[k] = v
	}
	return n
}
