package tools

import (
	"encoding/json"

	"github.com/harn-dev/harn/runtime"
)

// The names a model sees.
const (
	ToolRead   = "read"
	ToolWrite  = "write"
	ToolEdit   = "edit"
	ToolShell  = "shell"
	ToolGrep   = "grep"
	ToolGlob   = "glob"
	ToolList   = "capabilities_list"
	ToolSearch = "capabilities_search"
	ToolInsp   = "capabilities_inspect"
	ToolLoad   = "tools_load"
	ToolSkill  = "skills_activate"
)

// builtin is one core or discovery tool: its spec and the input subject
// the runtime's input patterns match.
type builtin struct {
	spec    Spec
	subject runtime.Subject
}

func mk(name, desc, schema string, mutating bool, provider string, subj runtime.Subject) builtin {
	var v any
	if err := json.Unmarshal([]byte(schema), &v); err != nil {
		panic("tools: bad built-in schema for " + name + ": " + err.Error())
	}
	canon, _ := json.Marshal(v) // sorted keys: the hash does not depend on the literal's layout
	return builtin{spec: Spec{Name: name, Description: desc, Schema: canon, Mutating: mutating, Provider: provider, Hash: Hash(canon)}, subject: subj}
}

// coreTools are loaded when a task starts, in this order.
var coreTools = []builtin{
	mk(ToolRead, "Read a text file in the working directory. Lines come numbered; offset (1-based line) and limit page through long files.",
		`{"type":"object","properties":{"path":{"type":"string","description":"file path, relative to the working directory"},"offset":{"type":"integer","minimum":1},"limit":{"type":"integer","minimum":1}},"required":["path"],"additionalProperties":false}`,
		false, ProviderCore, runtime.SubjectPath),
	mk(ToolWrite, "Create or overwrite a file in the working directory with the given content; missing parent folders are created.",
		`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"],"additionalProperties":false}`,
		true, ProviderCore, runtime.SubjectPath),
	mk(ToolEdit, "Replace an exact text in a file. old_string must occur exactly once unless replace_all is true; include enough context to make it unique.",
		`{"type":"object","properties":{"path":{"type":"string"},"old_string":{"type":"string","minLength":1},"new_string":{"type":"string"},"replace_all":{"type":"boolean"}},"required":["path","old_string","new_string"],"additionalProperties":false}`,
		true, ProviderCore, runtime.SubjectPath),
	mk(ToolShell, "Run a shell command (sh -c) in the working directory. Output (stdout and stderr) and time are bounded; timeout_ms defaults to 120000.",
		`{"type":"object","properties":{"command":{"type":"string","minLength":1},"timeout_ms":{"type":"integer","minimum":1}},"required":["command"],"additionalProperties":false}`,
		true, ProviderCore, runtime.SubjectCommand),
	mk(ToolGrep, "Search files for a regular expression (RE2 syntax). path narrows to a folder or file; glob filters file names (e.g. *.go).",
		`{"type":"object","properties":{"pattern":{"type":"string","minLength":1},"path":{"type":"string"},"glob":{"type":"string"},"ignore_case":{"type":"boolean"},"max_results":{"type":"integer","minimum":1}},"required":["pattern"],"additionalProperties":false}`,
		false, ProviderCore, runtime.SubjectPath),
	mk(ToolGlob, "List files whose path matches a glob (** crosses folders, * stays within one), relative to path or the working directory.",
		`{"type":"object","properties":{"pattern":{"type":"string","minLength":1},"path":{"type":"string"}},"required":["pattern"],"additionalProperties":false}`,
		false, ProviderCore, runtime.SubjectNone),
}

// discoveryTools are harn's: how a model finds and admits the rest.
var discoveryTools = []builtin{
	mk(ToolList, "List the tools and skills this task may discover, with a one-line description each. kind filters to tool or skill.",
		`{"type":"object","properties":{"kind":{"type":"string","enum":["tool","skill"]}},"additionalProperties":false}`,
		false, ProviderHarn, runtime.SubjectNone),
	mk(ToolSearch, "Search the discoverable tools and skills by words in their name or description.",
		`{"type":"object","properties":{"query":{"type":"string","minLength":1},"kind":{"type":"string","enum":["tool","skill"]}},"required":["query"],"additionalProperties":false}`,
		false, ProviderHarn, runtime.SubjectNone),
	mk(ToolInsp, "Show one tool's or skill's contract: its schema (tools), provider, contract hash and size in tokens.",
		`{"type":"object","properties":{"name":{"type":"string","minLength":1}},"required":["name"],"additionalProperties":false}`,
		false, ProviderHarn, runtime.SubjectNone),
	mk(ToolLoad, "Load a discovered tool into this task; it is callable from the next request on. Answers with the need, margin and ceiling when it does not fit the context budget.",
		`{"type":"object","properties":{"name":{"type":"string","minLength":1}},"required":["name"],"additionalProperties":false}`,
		false, ProviderHarn, runtime.SubjectNone),
	mk(ToolSkill, "Activate a skill for the next model step: its instructions join the context once.",
		`{"type":"object","properties":{"name":{"type":"string","minLength":1}},"required":["name"],"additionalProperties":false}`,
		false, ProviderHarn, runtime.SubjectNone),
}

// CoreSpecs returns the core workspace tools' specs, in order.
func CoreSpecs() []Spec { return specsOf(coreTools) }

// DiscoverySpecs returns the discovery tools' specs, in order.
func DiscoverySpecs() []Spec { return specsOf(discoveryTools) }

func specsOf(bs []builtin) []Spec {
	out := make([]Spec, len(bs))
	for i, b := range bs {
		out[i] = b.spec
	}
	return out
}

// capability is a built-in tool as a runtime catalog entry: core, so
// loaded when the task starts.
func (b builtin) capability() runtime.Capability {
	return runtime.Capability{Name: b.spec.Name, Kind: runtime.KindTool, Description: b.spec.Description,
		ContractHash: b.spec.Hash, Provider: b.spec.Provider, ReadOnly: !b.spec.Mutating,
		Tokens: EstimateTokens(b.spec.Name, b.spec.Description, string(b.spec.Schema)), Core: true, Subject: b.subject,
		Guarded: b.spec.Mutating && b.subject == runtime.SubjectPath}
}
