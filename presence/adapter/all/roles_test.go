package all_test

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/presence/adapter/all"
)

// TestEveryRegisteredAdapterDeclaresItsRoles: the hook, `harn hook
// install` and the task runtime ask an agent's adapter and name no agent,
// so a registered adapter that lacks one of the roles they ask fails here,
// naming the interface to implement.
func TestEveryRegisteredAdapterDeclaresItsRoles(t *testing.T) {
	for _, n := range all.Names() {
		a, _ := all.Lookup(n)
		if _, ok := a.(adapter.Planner); !ok {
			t.Errorf("adapter %q is no adapter.Planner: say which hooks ask the node about a call (PlanCall) and what they write (Writes)", n)
		}
		if _, ok := a.(adapter.Answerer); !ok {
			t.Errorf("adapter %q is no adapter.Answerer: give its agent's deny, allow and warn answers", n)
		}
		if _, ok := a.(adapter.Installer); !ok {
			t.Errorf("adapter %q is no adapter.Installer: say where its agent keeps its hooks and instructions (an empty InstallSpec for none)", n)
		}
		if _, ok := a.(adapter.Cataloger); !ok {
			t.Errorf("adapter %q is no adapter.Cataloger: declare its agent's tools", n)
		}
		if _, ok := a.(adapter.Describer); !ok {
			t.Errorf("adapter %q is no adapter.Describer: read its tools' inputs for the operator who approves a call", n)
		}
	}
}

// TestInstallSpecsAreComplete: an installable agent names its file, the
// events harn registers (each one it waits at among them), its timeout
// unit, and an instruction file; --remote-approve is offered exactly for
// the agents whose adapter answers a permission request.
func TestInstallSpecsAreComplete(t *testing.T) {
	if len(all.Installable()) == 0 {
		t.Fatal("no installable agent")
	}
	for _, n := range all.Installable() {
		is, _ := all.Install(n)
		s := is.Settings
		if s.Dir == "" || s.File == "" || len(s.Events) == 0 || s.Unit <= 0 {
			t.Errorf("%s: settings spec lacks its folder, file, events or timeout unit: %+v", n, s)
		}
		for _, w := range append(slices.Clone(s.Waits), s.ApproveEvent) {
			if w != "" && !slices.Contains(s.Events, w) {
				t.Errorf("%s: waits at %q, which it does not register", n, w)
			}
		}
		if i := is.Instructions; i == nil || i.File == "" || i.ProjectFile == "" {
			t.Errorf("%s: no instruction file", n)
		}
		a, _ := all.Lookup(n)
		_, approver := a.(adapter.Approver)
		if approver != (s.ApproveEvent != "") {
			t.Errorf("%s: adapter.Approver %v but ApproveEvent %q: declare both or neither", n, approver, s.ApproveEvent)
		}
	}
}

// TestAnswersAndPlansAreTheAgentsOwnFormats: each adapter's deny, allow,
// warn and permission answers, and its reading of a tool call's hook,
// are byte for byte what the hook printed and asked before the adapters
// owned them (testdata/roles.golden.json; /work/shared/spec/hooks.md).
func TestAnswersAndPlansAreTheAgentsOwnFormats(t *testing.T) {
	b, err := os.ReadFile("testdata/roles.golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Answers []struct{ Agent, Event, Kind, Reason, Out string }
		Plans   []struct {
			Agent, In                       string
			Claimed, OK                     bool
			Phase, Session, Tool, Input, ID string
			Failed                          bool
			Event                           string
		}
	}
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Answers) == 0 || len(g.Plans) == 0 {
		t.Fatal("empty golden file")
	}
	for _, w := range g.Answers {
		var got []byte
		if w.Agent == "" { // the permission answer the family shares
			a, _ := all.Lookup("claude-code")
			got = a.(adapter.Approver).Permission(w.Kind == "perm-allow", w.Reason)
		} else {
			a, _ := all.Lookup(w.Agent)
			an := a.(adapter.Answerer)
			c := adapter.Call{Event: w.Event}
			switch w.Kind {
			case "deny":
				got = an.Deny(c, w.Reason)
			case "allow":
				got = an.Allow(c, w.Reason)
			case "warn":
				got = an.Warn(c, w.Reason)
			}
		}
		if string(got) != w.Out {
			t.Errorf("%s %s %s(%q) = %q; want %q", w.Agent, w.Event, w.Kind, w.Reason, got, w.Out)
		}
	}
	for _, w := range g.Plans {
		a, _ := all.Lookup(w.Agent)
		c, ok := a.(adapter.Planner).PlanCall([]byte(w.In), w.Claimed)
		if c.Phase == adapter.PhaseNone {
			c.ID = "" // the golden file has the call's id only when it asks
		}
		got := []any{ok, string(c.Phase), c.Session, c.Tool, string(c.Input), c.ID, c.Failed, c.Event}
		want := []any{w.OK, w.Phase, w.Session, w.Tool, w.Input, w.ID, w.Failed, w.Event}
		if !slices.Equal(got, want) {
			t.Errorf("%s PlanCall(%s, claimed %v) = %v; want %v", w.Agent, w.In, w.Claimed, got, want)
		}
		if c.Permission != (ok && c.Event == "PermissionRequest") {
			t.Errorf("%s PlanCall(%s): Permission %v", w.Agent, w.In, c.Permission)
		}
	}
}

func TestCatalogOfADriverIsItsAgents(t *testing.T) {
	for in, want := range map[string]string{"claude": "claude-code", "codex": "codex", "gemini": "gemini",
		"generic": all.GenericCatalog, "vim": all.GenericCatalog, "harn": all.GenericCatalog} {
		if got := all.CatalogOf(in); got != want {
			t.Errorf("CatalogOf(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestSessionEnvKeepsItsOrder(t *testing.T) {
	want := []string{"CLAUDE_SESSION_ID", "CODEX_SESSION_ID", "CODEX_THREAD_ID", "GEMINI_SESSION_ID", "CURSOR_CONVERSATION_ID"}
	if got := all.SessionEnv(); !slices.Equal(got, want) {
		t.Fatalf("SessionEnv() = %q; want %q", got, want)
	}
}
