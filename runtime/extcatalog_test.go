package runtime

// externalCatalog returns the catalog of an external agent's own tools
// ("claude-code" or "codex"; anything else gets Claude Code's list): the
// built-in tools with their input subjects, and `mcp__*` for the agent's
// MCP tools. Everything is core (the agent loads its own schemas) and has
// no contract hash (the agent owns its schemas).
func externalCatalog(agent string) []Capability {
	p := agent
	t := func(name string, ro bool, s Subject) Capability {
		return Capability{Name: name, Kind: KindTool, Provider: p, ReadOnly: ro, Core: true, Subject: s}
	}
	if agent == "codex" {
		return []Capability{
			t("Bash", false, SubjectCommand),
			t("apply_patch", false, SubjectNone),
			t("update_plan", true, SubjectNone),
			t("web_search", true, SubjectText),
			t("view_image", true, SubjectPath),
			{Name: "mcp__*", Kind: KindTool, Provider: "mcp", Core: true},
		}
	}
	return []Capability{
		t("Bash", false, SubjectCommand),
		t("BashOutput", true, SubjectNone),
		t("KillShell", false, SubjectNone),
		t("Edit", false, SubjectPath),
		t("MultiEdit", false, SubjectPath),
		t("Write", false, SubjectPath),
		t("NotebookEdit", false, SubjectPath),
		t("Read", true, SubjectPath),
		t("Glob", true, SubjectPath),
		t("Grep", true, SubjectPath),
		t("LS", true, SubjectPath),
		t("WebFetch", true, SubjectText),
		t("WebSearch", true, SubjectText),
		t("TodoWrite", true, SubjectNone),
		t("Task", false, SubjectNone),
		t("ExitPlanMode", true, SubjectNone),
		{Name: "mcp__*", Kind: KindTool, Provider: "mcp", Core: true},
	}
}
