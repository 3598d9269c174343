package subagent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestProjectProfilesLoadAndExplorerCannotWrite(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(AgentsDir(dir), 0o755)
	os.WriteFile(filepath.Join(AgentsDir(dir), "docs-writer.md"), []byte("---\nname: docs-writer\ndescription: writes docs\ntools: [read, write, grep]\nskills: style\nmodel: small-model\n---\nYou write documentation.\n"), 0o600)
	os.WriteFile(filepath.Join(AgentsDir(dir), "broken.md"), []byte("---\nname: Bad Name\n---\nx"), 0o600)
	ps, err := LoadProfiles(dir)
	if err == nil || !errors.Is(err, ErrProfile) || !strings.Contains(err.Error(), "broken.md") {
		t.Fatalf("the broken file is named: %v", err)
	}
	p, ok := ps["docs-writer"]
	if !ok || p.Model != "small-model" || p.Prompt != "You write documentation." || len(p.Skills) != 1 || p.Source == "" {
		t.Fatalf("%+v", p)
	}
	if !p.Allows("write") || p.Allows("shell") || !p.Allows(ToolHandoff) || p.Allows(ToolAgent) {
		t.Fatal("docs-writer's tools")
	}
	for _, name := range []string{ProfileExplorer, ProfileReviewer} {
		e := ps[name]
		for _, w := range []string{"write", "edit", "shell", "mcp__fs__write_file", ToolAgent} {
			if e.Allows(w) {
				t.Fatalf("%s may %s", name, w)
			}
		}
		if !e.Allows("read") || !e.Allows("grep") {
			t.Fatalf("%s cannot read", name)
		}
	}
	if im := ps[ProfileImplementer]; !im.Allows("write") || !im.Allows("shell") || im.Allows(ToolAgent) {
		t.Fatal("implementer")
	}
	if got := promptOf(p, "brief"); !strings.HasPrefix(got, "/style ") || !strings.HasSuffix(got, "brief") {
		t.Fatalf("%q", got)
	}
}

func TestHandoffSchema(t *testing.T) {
	if h, err := ParseHandoff([]byte(validHandoff)); err != nil || h.Status != HandoffDone || len(h.Changes) != 1 {
		t.Fatalf("%+v %v", h, err)
	}
	for _, bad := range []string{
		``, `[]`, `{"status":"done"}`,
		`{"status":"won","changes":[],"verification":"v","unresolved":[]}`,
		`{"status":"done","changes":[],"verification":"v","unresolved":[],"transcript":"x"}`,
		`{"status":"done","changes":[""],"verification":"v","unresolved":[]}`,
		`{"status":"done","changes":[],"verification":"   ","unresolved":[]}`,
		`{"status":"done","changes":[],"verification":"` + strings.Repeat("v", MaxHandoffBytes) + `","unresolved":[]}`,
	} {
		if _, err := ParseHandoff([]byte(bad)); !errors.Is(err, ErrInvalidHandoff) {
			t.Fatalf("%.60q accepted: %v", bad, err)
		}
	}
	h, err := ParseHandoff([]byte(`{"status":"partial","changes":["a\u001b[31mb"],"verification":"ok","unresolved":["x"]}`))
	if err != nil || strings.ContainsRune(h.Changes[0], 0x1b) {
		t.Fatalf("%+v %v", h, err)
	}
}

func FuzzParseHandoff(f *testing.F) {
	f.Add([]byte(validHandoff))
	f.Add([]byte(`{"status":"done","changes":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHandoff(b)
		if err == nil && (h.Changes == nil || h.Unresolved == nil || h.Verification == "") {
			t.Fatalf("accepted an incomplete handoff: %+v", h)
		}
	})
}

func FuzzParseProfile(f *testing.F) {
	f.Add([]byte("---\nname: a\ntools: read, grep\n---\nbody"))
	f.Add([]byte("just a body"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseProfile(b, "fallback")
		if err == nil && (p.Prompt == "" || !profileName.MatchString(p.Name)) {
			t.Fatalf("accepted %+v", p)
		}
	})
}

// TestAProfileOrInstructionLinkedOutOfTheProjectIsNotRead: an agent
// profile symlinked to a file outside, and a child's AGENTS.md linked to
// a key outside, are skipped; the manager's default loads no project
// profile at all (only a trusted project's, which the node hands it).
func TestAProfileOrInstructionLinkedOutOfTheProjectIsNotRead(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "repo")
	secret := filepath.Join(base, "node.pem")
	os.WriteFile(secret, []byte("---\nname: leak\n---\nBEGIN PRIVATE KEY"), 0o600)
	os.MkdirAll(AgentsDir(dir), 0o755)
	if err := os.Symlink(secret, filepath.Join(AgentsDir(dir), "leak.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	ps, err := LoadProfiles(dir)
	if _, ok := ps["leak"]; ok || err == nil || !strings.Contains(err.Error(), "leak.md") {
		t.Fatalf("a profile linked out loaded (or was not named): %v", err)
	}
	os.WriteFile(filepath.Join(AgentsDir(dir), "mine.md"), []byte("---\nname: mine\n---\nx"), 0o600)
	m, err := New(Config{Runner: &fakeRunner{}, Store: newMemStore()})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := m.cfg.Profiles(dir); got["mine"].Name != "" {
		t.Fatal("the manager's default loaded a project profile without a trust check")
	}
}
