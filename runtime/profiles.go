package runtime

// What each named profile is for, and what it lets harn's own tools do:
// computed from the profiles' grants with the same ceiling a call is
// checked against, so that `harn profiles` and the docs' table (which a
// test holds to it) never drift from the grants.

// DefaultAgentProfile is the profile of a harn session whose start names
// no grants (harn ask, the TUI, harn task start --agent harn).
const DefaultAgentProfile = "confirm"

// What a profile lets a tool do (ProfileInfo.Tools).
const (
	ToolRuns = "runs" // executes without asking
	ToolAsks = "asks" // executes once an operator confirms the call
	ToolNo   = "no"   // refused (discoverable, not callable)
)

// ProfileTools are the columns of the profiles table: a label and the
// capabilities of harn's loop it stands for (one value when they agree).
var ProfileTools = []struct {
	Label        string
	Capabilities []string
}{
	{"read grep glob", []string{"read", "grep", "glob"}},
	{"write edit", []string{"write", "edit"}},
	{"shell", []string{"shell"}},
	{"MCP tools", []string{"mcp__server__tool"}},
}

// profileSummaries say what each profile is for.
var profileSummaries = map[string]string{
	"read-only": "reads and searches the project; changes nothing",
	"confirm":   "reads freely; asks before each write, edit, command and other tool",
	"edit":      "reads, writes and edits files without asking; runs no command",
	"full":      "runs every tool without asking",
}

// ProfileInfo is one named profile as `harn profiles` prints it.
type ProfileInfo struct {
	Name    string `json:"name"`
	Summary string `json:"summary"`
	// Tools is what the profile lets harn's tools do, one value per
	// ProfileTools column, in order: runs, asks or no.
	Tools   []string `json:"tools"`
	Default bool     `json:"default,omitempty"` // harn's own agent's default
	Grants  []Grant  `json:"grants"`
}

// Profiles describes the named profiles, in ProfileNames' order.
func Profiles() []ProfileInfo {
	out := make([]ProfileInfo, 0, len(profiles))
	for _, name := range ProfileNames() {
		gs, _ := Profile(name)
		p := ProfileInfo{Name: name, Summary: profileSummaries[name], Grants: gs, Default: name == DefaultAgentProfile}
		for _, col := range ProfileTools {
			v := ""
			for _, c := range col.Capabilities {
				w := ToolAllows(gs, c)
				if v != "" && v != w {
					w = "mixed"
				}
				v = w
			}
			p.Tools = append(p.Tools, v)
		}
		out = append(out, p)
	}
	return out
}

// ToolAllows says what grants let a tool named capability do with any
// input: runs, asks (every execute grant that applies asks for a
// confirmation) or no.
func ToolAllows(grants []Grant, capability string) string {
	c := Capability{Name: capability, Kind: KindTool}
	lvl, confirm := ceiling(grants, nil, &c, "", modeAny, "")
	switch {
	case lvl < Execute:
		return ToolNo
	case confirm:
		return ToolAsks
	}
	return ToolRuns
}
