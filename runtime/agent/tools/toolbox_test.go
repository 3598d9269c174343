package tools

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harn-dev/harn/runtime"
)

func skillFile(t *testing.T, project, name, desc, body string) {
	t.Helper()
	writeFileT(t, filepath.Join(project, ".harn", "skills", name, "SKILL.md"),
		"---\nname: "+name+"\ndescription: "+desc+"\n---\n"+body+"\n")
}

func names(ss []Spec) string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	return strings.Join(out, ",")
}

func TestCatalogPublishesEveryToolWithKindProviderAndHash(t *testing.T) {
	project := t.TempDir()
	skillFile(t, project, "review", "Review a change.", "Read the diff first.")
	f := newFixture(t, fixOpts{cfg: Config{Project: project}})
	by := map[string]runtime.Capability{}
	for _, c := range f.box.Capabilities() {
		by[c.Name] = c
	}
	for _, s := range append(CoreSpecs(), DiscoverySpecs()...) {
		c := by[s.Name]
		if c.Kind != runtime.KindTool || c.ContractHash != s.Hash || c.Provider != s.Provider || !c.Core || c.ReadOnly == s.Mutating {
			t.Fatalf("%s: %+v", s.Name, c)
		}
	}
	if c := by["review"]; c.Kind != runtime.KindSkill || c.Provider != ProviderSkills || c.ContractHash == "" || c.Core {
		t.Fatalf("skill: %+v", c)
	}
	if got := names(f.box.Specs("", f.task)); got != "read,write,edit,shell,grep,glob,capabilities_list,capabilities_search,capabilities_inspect,tools_load,skills_activate" {
		t.Fatal(got)
	}
}

func TestDiscoveryListsSearchesAndInspects(t *testing.T) {
	project := t.TempDir()
	skillFile(t, project, "review", "Review a change.", "Read the diff first.")
	f := newFixture(t, fixOpts{cfg: Config{Project: project}})
	var es []entry
	if err := json.Unmarshal([]byte(f.mustCall(ToolList, map[string]any{})), &es); err != nil {
		t.Fatal(err)
	}
	if len(es) != 12 {
		t.Fatalf("%d entries: %+v", len(es), es)
	}
	out := f.mustCall(ToolSearch, map[string]any{"query": "review change"})
	if !strings.Contains(out, `"name":"review"`) || strings.Contains(out, `"read"`) {
		t.Fatal(out)
	}
	out = f.mustCall(ToolList, map[string]any{"kind": "skill"})
	if out != `[{"name":"review","kind":"skill","description":"Review a change."}]` {
		t.Fatal(out)
	}
	var k contract
	if err := json.Unmarshal([]byte(f.mustCall(ToolInsp, map[string]any{"name": "edit"})), &k); err != nil {
		t.Fatal(err)
	}
	if k.Hash != Hash(k.Schema) || !k.Mutating || k.Provider != ProviderCore {
		t.Fatalf("%+v", k)
	}
}

// Each discovery step is checked against the task's grants, in order.
func TestToolOutsideGrantsIsRefused(t *testing.T) {
	project := t.TempDir()
	skillFile(t, project, "review", "Review a change.", "body")
	grants := []runtime.Grant{
		{Level: runtime.Execute, Capability: "capabilities_*"},
		{Level: runtime.Execute, Capability: "tools_load"},
		{Level: runtime.Execute, Capability: "skills_activate"},
		{Level: runtime.Execute, Capability: "read"},
		{Level: runtime.Discover, Capability: "review"},
		{Level: runtime.Discover, Capability: "write"},
	}
	f := newFixture(t, fixOpts{cfg: Config{Project: project}, grants: grants})
	writeFileT(t, filepath.Join(f.dir, "a.txt"), "x")
	f.mustCall(ToolRead, map[string]any{"path": "a.txt"})
	// execute needs an execute grant: write is only discoverable.
	if _, err := f.call(ToolWrite, map[string]any{"path": "a.txt", "content": "y"}); !errors.Is(err, runtime.ErrNotGranted) {
		t.Fatalf("write: %v", err)
	}
	// shell is not even discoverable.
	out := f.mustCall(ToolList, map[string]any{})
	if strings.Contains(out, `"shell"`) || !strings.Contains(out, `"write"`) {
		t.Fatal(out)
	}
	// discover < inspect: inspecting a discover-only skill is refused.
	res, err := f.call(ToolInsp, map[string]any{"name": "review"})
	if !errors.Is(err, runtime.ErrNotGranted) || !res.IsError {
		t.Fatalf("inspect: %v %+v", err, res)
	}
	// discover < activate.
	if _, err := f.call(ToolSkill, map[string]any{"name": "review"}); !errors.Is(err, runtime.ErrNotGranted) {
		t.Fatalf("activate: %v", err)
	}
	if _, err := f.call(ToolLoad, map[string]any{"name": "shell"}); !errors.Is(err, runtime.ErrNotGranted) {
		t.Fatalf("load: %v", err)
	}
}

func TestSkillActivatedByTheModelLastsOneStep(t *testing.T) {
	project := t.TempDir()
	skillFile(t, project, "review", "Review a change.", "REVIEW BODY")
	f := newFixture(t, fixOpts{cfg: Config{Project: project}})
	if len(f.box.Instructions("", f.task)) != 0 {
		t.Fatal("a skill active before activation")
	}
	f.mustCall(ToolSkill, map[string]any{"name": "review"})
	f.box.EndStep("", f.task) // the step that activated it ends
	ins := f.box.Instructions("", f.task)
	if len(ins) != 1 || !strings.Contains(ins[0], "REVIEW BODY") {
		t.Fatalf("next step: %q", ins)
	}
	f.box.EndStep("", f.task) // the step that saw it ends
	if ins := f.box.Instructions("", f.task); len(ins) != 0 {
		t.Fatalf("still active after its step: %q", ins)
	}
	if cv, _ := f.rt.Context(f.task); len(cv.StepSkills) != 0 {
		t.Fatalf("runtime context: %+v", cv)
	}
}

func TestSkillActivatedBySlashNameLastsTheTask(t *testing.T) {
	project := t.TempDir()
	skillFile(t, project, "review", "Review a change.", "REVIEW BODY")
	f := newFixture(t, fixOpts{cfg: Config{Project: project}})
	st := f.box.Prompt("", f.task, "please /review this, and look at /usr/bin too")
	if len(st) != 1 || st[0] != "skill review active for this task" {
		t.Fatalf("%q", st)
	}
	for i := 0; i < 3; i++ {
		f.box.EndStep("", f.task)
		if ins := f.box.Instructions("", f.task); len(ins) != 1 || !strings.Contains(ins[0], "REVIEW BODY") {
			t.Fatalf("step %d: %q", i, ins)
		}
	}
}

func TestSkillThatDoesNotFitIsSkippedWithAStatus(t *testing.T) {
	project := t.TempDir()
	skillFile(t, project, "huge", "Too big.", strings.Repeat("word ", 4000))
	f := newFixture(t, fixOpts{cfg: Config{Project: project}, budget: runtime.Budget{UsableInput: 4000, Base: 1000}})
	st := f.box.Prompt("", f.task, "/huge")
	if len(st) != 1 || !strings.Contains(st[0], "skipped") {
		t.Fatalf("%q", st)
	}
	if ins := f.box.Instructions("", f.task); len(ins) != 0 {
		t.Fatal(ins)
	}
	// The model's activation is refused with the need, margin and ceiling.
	res, err := f.call(ToolSkill, map[string]any{"name": "huge"})
	if !errors.Is(err, runtime.ErrNotAdmitted) || !strings.Contains(res.Content, `"ceiling":3200`) || !strings.Contains(res.Content, `"margin":160`) || !strings.Contains(res.Content, `"need":`) {
		t.Fatalf("%v %q", err, res.Content)
	}
}

func TestParseSkillFrontMatter(t *testing.T) {
	s, err := ParseSkill([]byte("---\nname: pdf\ndescription: \"Work with PDFs.\"\nlicense: x\n---\n# PDF\nUse pdftotext.\n"), "/x/pdf")
	if err != nil || s.Name != "pdf" || s.Description != "Work with PDFs." || s.Body != "# PDF\nUse pdftotext." {
		t.Fatalf("%+v %v", s, err)
	}
	s, err = ParseSkill([]byte("Just a body."), "/x/plain")
	if err != nil || s.Name != "plain" || s.Body != "Just a body." {
		t.Fatalf("%+v %v", s, err)
	}
	if _, err := ParseSkill([]byte("---\nname: x\n"), "/x/x"); !errors.Is(err, ErrConfig) {
		t.Fatal(err)
	}
	if _, err := ParseSkill([]byte("---\nname: ../etc\n---\n"), "/x/y"); !errors.Is(err, ErrConfig) {
		t.Fatal(err)
	}
}

func TestProjectSkillShadowsTheUsers(t *testing.T) {
	project, user := t.TempDir(), t.TempDir()
	skillFile(t, project, "review", "project", "P")
	writeFileT(t, filepath.Join(user, "review", "SKILL.md"), "---\nname: review\ndescription: user\n---\nU")
	writeFileT(t, filepath.Join(user, "other", "SKILL.md"), "---\nname: other\ndescription: user\n---\nO")
	sk := LoadSkills([]string{filepath.Join(project, ".harn", "skills"), user}, nil)
	if len(sk) != 2 || sk[0].Name != "other" || sk[1].Description != "project" {
		t.Fatalf("%+v", sk)
	}
}

// TestASkillLinkedOutOfItsFolderIsNotLoaded: a SKILL.md that is a symlink
// to a file outside its skills folder (an environment, a key) is skipped;
// one linked inside the folder loads.
func TestASkillLinkedOutOfItsFolderIsNotLoaded(t *testing.T) {
	base := t.TempDir()
	writeFileT(t, filepath.Join(base, "secret"), "---\nname: leak\n---\nPRIVATE KEY")
	skills := filepath.Join(base, "skills")
	writeFileT(t, filepath.Join(skills, "shared.md"), "---\nname: fine\n---\nOK")
	for name, target := range map[string]string{"leak": filepath.Join(base, "secret"), "env": "/proc/self/environ", "fine": "../shared.md"} {
		if err := os.MkdirAll(filepath.Join(skills, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(skills, name, "SKILL.md")); err != nil {
			t.Fatal(err)
		}
	}
	sk := LoadSkills([]string{skills}, nil)
	if len(sk) != 1 || sk[0].Name != "fine" || sk[0].Body != "OK" {
		t.Fatalf("%+v; want the skill linked inside alone", sk)
	}
}
