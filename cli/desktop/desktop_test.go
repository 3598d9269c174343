package desktop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

const fixture = "testdata/tree"

// copyTree copies the fixture tree into a temp dir and returns the copy.
func copyTree(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(fixture, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(fixture, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func scan(t *testing.T, dir string) *Tree {
	t.Helper()
	tr, err := Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// snapshot is every file under dir with its bytes and mode.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, _ := d.Info()
		out[p] = fi.Mode().String() + " " + string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// fakeLifecycles is a table of sessions; it counts its lookups.
type fakeLifecycles struct {
	known map[string]Lifecycle
	calls map[string]int
	err   error
}

func (f *fakeLifecycles) Lifecycle(_ context.Context, id string) (Lifecycle, error) {
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[id]++
	if f.err != nil {
		return Lifecycle{}, f.err
	}
	return f.known[id], nil
}

func done() Lifecycle   { return Lifecycle{Known: true, TaskState: "done", Declared: true} }
func active() Lifecycle { return Lifecycle{Known: true, TaskState: "active", Declared: true} }

func TestScanReadsEntriesAcrossAccounts(t *testing.T) {
	tr := scan(t, copyTree(t))
	var got []string
	for _, e := range tr.Entries {
		got = append(got, e.Rel()+" "+e.CLISessionID)
	}
	want := []string{
		"acct-ana/env-main/local_0a1.json desk-done-5b7d",
		"acct-ana/env-main/local_0a2.json desk-blocked-9c3a",
		"acct-ana/env-main/local_0a3.json desk-legacy-0d6e",
		"acct-ana/env-main/local_0a4.json desk-active-2f4b",
		"acct-bo/env-main/local_0a1.json desk-done-5b7d",
		"acct-bo/env-main/local_0b2.json desk-bo-only-1a77",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("entries\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(tr.Accounts) != 3 || tr.Accounts[2].Name != "acct-cy" || !reflect.DeepEqual(tr.Accounts[2].Envs, []string{"env-cy"}) {
		t.Fatalf("accounts %+v", tr.Accounts)
	}
	bo := tr.Entries[5]
	if !bo.Archived || bo.Cwd != "/home/bo/api" || !strings.Contains(bo.Title, "\x1b[31m") {
		t.Fatalf("fields of %s: %+v", bo.Rel(), bo.Fields)
	}
}

func TestMalformedEntrySkippedWithWarning(t *testing.T) {
	tr := scan(t, copyTree(t))
	if len(tr.Warnings) != 1 {
		t.Fatalf("warnings %v, want one", tr.Warnings)
	}
	w := tr.Warnings[0]
	var me *MalformedError
	if !errors.Is(w, ErrMalformed) || !errors.As(w, &me) || !strings.HasSuffix(me.Path, "local_0a5.json") {
		t.Fatalf("warning %v (%T)", w, w)
	}
	if msg := w.Error(); !strings.Contains(msg, "local_0a5.json") || !strings.Contains(msg, "fix or remove") || strings.Contains(msg, "\n") {
		t.Fatalf("warning text %q must be one line naming the file and the fix", msg)
	}
}

func TestUnreadableDataDirIsOneLineErrorNamingTheFix(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	cases := map[string]string{"missing": filepath.Join(dir, "nosuch"), "a file": file}
	if os.Geteuid() != 0 {
		locked := filepath.Join(dir, "locked")
		os.MkdirAll(filepath.Join(locked, SessionsDir), 0o755)
		os.Chmod(filepath.Join(locked, SessionsDir), 0)
		t.Cleanup(func() { os.Chmod(filepath.Join(locked, SessionsDir), 0o755) })
		cases["sessions folder unreadable"] = locked
	}
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Scan(p)
			var de *DataDirError
			if !errors.Is(err, ErrDataDir) || !errors.As(err, &de) {
				t.Fatalf("Scan(%s): %v", p, err)
			}
			msg := err.Error()
			if !strings.Contains(msg, p) || !strings.Contains(msg, "--data-dir") || strings.Contains(msg, "\n") {
				t.Fatalf("error %q must be one line naming %s and --data-dir", msg, p)
			}
		})
	}
}

func TestMissingSessionsFolderIsEmpty(t *testing.T) {
	tr := scan(t, t.TempDir())
	if len(tr.Entries) != 0 || len(tr.Warnings) != 0 {
		t.Fatalf("%+v", tr)
	}
}

func TestDefaultDataDirPerSystem(t *testing.T) {
	cases := []struct{ goos, home, xdg, want string }{
		{"darwin", "/Users/ana", "", "/Users/ana/Library/Application Support/Claude"},
		{"linux", "/home/ana", "", "/home/ana/.config/Claude"},
		{"linux", "/home/ana", "/home/ana/cfg", "/home/ana/cfg/Claude"},
		{"linux", "/home/ana", "relative", "/home/ana/.config/Claude"},
		{"windows", `C:\Users\ana`, "", ""},
		{"linux", "", "", ""},
	}
	for _, c := range cases {
		got, err := DefaultDataDir(c.goos, c.home, c.xdg)
		if c.want == "" {
			if !errors.Is(err, ErrNoDefaultDir) || !strings.Contains(err.Error(), "--data-dir") {
				t.Errorf("%s %q: %q, %v; want ErrNoDefaultDir naming --data-dir", c.goos, c.home, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s %q %q: %q, %v; want %q", c.goos, c.home, c.xdg, got, err, c.want)
		}
	}
}

// decide runs Decide on an entry with title and lifecycle l.
func decide(title string, l Lifecycle, legacy bool) Decision {
	return Decide(Row{Entry: Entry{Fields: Fields{CLISessionID: "s1", Title: title}}, Lifecycle: l}, legacy)
}

func TestTidyArchivesWhenLatestLifecycleIsDone(t *testing.T) {
	cases := []struct {
		name string
		l    Lifecycle
		want bool
	}{
		{"done", done(), true},
		{"active", active(), false},
		{"blocked", Lifecycle{Known: true, TaskState: "blocked", Declared: true}, false},
		{"known, never declared", Lifecycle{Known: true, TaskState: "active"}, false},
		{"unknown", Lifecycle{}, false},
	}
	for _, c := range cases {
		for _, legacy := range []bool{false, true} {
			if d := decide("Agent Flint - fix it", c.l, legacy); d.Archive != c.want {
				t.Errorf("%s (legacy %v): archive %v (%s), want %v", c.name, legacy, d.Archive, d.Reason, c.want)
			}
		}
	}
}

func TestBlockedTitleNeverQualifies(t *testing.T) {
	for _, l := range []Lifecycle{done(), active(), {}} {
		for _, legacy := range []bool{false, true} {
			for _, title := range []string{"[BLOCKED] - Agent Ash - x", "  [BLOCKED] [DONE] x"} {
				if d := decide(title, l, legacy); d.Archive || !strings.Contains(d.Reason, "[BLOCKED]") {
					t.Errorf("%q with %+v (legacy %v): archive %v (%s)", title, l, legacy, d.Archive, d.Reason)
				}
			}
		}
	}
}

func TestLegacyDonePrefixNeedsFlagWithoutLifecycleEvidence(t *testing.T) {
	for _, l := range []Lifecycle{{}, {Known: true, TaskState: "active"}} {
		d := decide("[DONE] - Agent Old - x", l, false)
		if d.Archive || !strings.Contains(d.Reason, "--include-legacy-prefix") {
			t.Errorf("without the flag (%+v): archive %v (%s)", l, d.Archive, d.Reason)
		}
		if d := decide("[DONE] - Agent Old - x", l, true); !d.Archive {
			t.Errorf("with the flag (%+v): not archived (%s)", l, d.Reason)
		}
	}
}

func TestTitleIsNotAnInputToLifecycle(t *testing.T) {
	// A [DONE] title on a session whose latest lifecycle event is active
	// stays, even with the legacy flag: evidence beats the title.
	for _, legacy := range []bool{false, true} {
		if d := decide("[DONE] - Agent Reed - x", active(), legacy); d.Archive {
			t.Errorf("legacy %v: archived on its title (%s)", legacy, d.Reason)
		}
	}
	// And a plain title on a done session is archived.
	if d := decide("whatever the user typed", done(), false); !d.Archive {
		t.Errorf("done session with a plain title not archived (%s)", d.Reason)
	}
}

func TestArchivedEntryStaysAsItIs(t *testing.T) {
	r := Row{Entry: Entry{Fields: Fields{CLISessionID: "s1", Archived: true}}, Lifecycle: done()}
	if d := Decide(r, true); d.Archive {
		t.Fatal("an archived entry was planned again")
	}
}

func TestLookupAsksOncePerSession(t *testing.T) {
	tr := scan(t, copyTree(t))
	lc := &fakeLifecycles{known: map[string]Lifecycle{"desk-done-5b7d": done()}}
	rows, err := Lookup(context.Background(), tr, lc)
	if err != nil {
		t.Fatal(err)
	}
	if lc.calls["desk-done-5b7d"] != 1 || len(lc.calls) != 5 {
		t.Fatalf("calls %v", lc.calls)
	}
	if rows[0].Lifecycle != done() || rows[4].Lifecycle != done() || rows[1].Lifecycle.Known {
		t.Fatalf("rows %+v", rows)
	}
	lc = &fakeLifecycles{err: errors.New("node down")}
	if _, err := Lookup(context.Background(), tr, lc); err == nil || !strings.Contains(err.Error(), "node down") {
		t.Fatalf("a failed lookup: %v", err)
	}
}

func TestTidyOnFixture(t *testing.T) {
	dir := copyTree(t)
	tr := scan(t, dir)
	before := snapshot(t, dir)
	lc := &fakeLifecycles{known: map[string]Lifecycle{
		"desk-done-5b7d":    done(),
		"desk-blocked-9c3a": done(), // its title says [BLOCKED]: never
		"desk-active-2f4b":  active(),
	}}
	for _, legacy := range []bool{false, true} {
		ds, err := PlanTidy(context.Background(), tr, lc, legacy)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, d := range ds {
			if d.Archive {
				got = append(got, d.Rel())
			}
		}
		want := []string{"acct-ana/env-main/local_0a1.json", "acct-bo/env-main/local_0a1.json"}
		if legacy {
			want = []string{"acct-ana/env-main/local_0a1.json", "acct-ana/env-main/local_0a3.json", "acct-bo/env-main/local_0a1.json"}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("legacy %v: archive %v, want %v", legacy, got, want)
		}
	}
	if !reflect.DeepEqual(before, snapshot(t, dir)) {
		t.Fatal("planning wrote to the tree")
	}
}

// decodeNumbers decodes b keeping numbers as written.
func decodeNumbers(t *testing.T, b []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestArchiveChangesOnlyTheArchiveFlag(t *testing.T) {
	dir := copyTree(t)
	tr := scan(t, dir)
	e := tr.Entries[0]
	if err := os.Chmod(e.Path, 0o640); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(e.Path)
	if err := Archive(e); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(e.Path)
	mb, ma := decodeNumbers(t, before), decodeNumbers(t, after)
	if ma["isArchived"] != true {
		t.Fatalf("isArchived %v", ma["isArchived"])
	}
	delete(mb, "isArchived")
	delete(ma, "isArchived")
	if !reflect.DeepEqual(mb, ma) {
		t.Fatalf("other fields changed:\n%s\n%s", before, after)
	}
	if !bytes.Contains(after, []byte("12345678901234567890")) || !bytes.HasSuffix(after, []byte("}\n")) {
		t.Fatalf("number or final newline lost: %s", after)
	}
	fi, _ := os.Stat(e.Path)
	if fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v, want 0640", fi.Mode().Perm())
	}
	noTempFiles(t, filepath.Dir(e.Path))
	// Archiving again writes nothing.
	st1, _ := os.Stat(e.Path)
	e2 := scan(t, dir).Entries[0]
	if err := Archive(e2); err != nil {
		t.Fatal(err)
	}
	if st2, _ := os.Stat(e.Path); !os.SameFile(st1, st2) {
		t.Fatal("archiving an archived entry rewrote it")
	}
}

func TestArchiveKeepsAnIndentedFileIndented(t *testing.T) {
	dir := copyTree(t)
	tr := scan(t, dir)
	e := tr.Entries[5]
	// Unarchive it first by hand, as the app would.
	b, _ := os.ReadFile(e.Path)
	os.WriteFile(e.Path, bytes.Replace(b, []byte(`"isArchived": true`), []byte(`"isArchived": false`), 1), 0o644)
	e.Archived = false
	if err := Archive(e); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(e.Path)
	if !bytes.Contains(after, []byte("\n  \"isArchived\": true")) {
		t.Fatalf("not indented: %s", after)
	}
}

func TestArchiveRefusesAnEntryThatChanged(t *testing.T) {
	dir := copyTree(t)
	e := scan(t, dir).Entries[0]
	b, _ := os.ReadFile(e.Path)
	changed := bytes.Replace(b, []byte("desk-done-5b7d"), []byte("desk-other"), 1)
	os.WriteFile(e.Path, changed, 0o644)
	if err := Archive(e); !errors.Is(err, ErrChanged) {
		t.Fatalf("Archive of a changed entry: %v", err)
	}
	if now, _ := os.ReadFile(e.Path); !bytes.Equal(now, changed) {
		t.Fatal("a refused archive wrote the file")
	}
}

func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".harn-") {
			t.Fatalf("temp file left behind: %s", e.Name())
		}
	}
}

// idsByAccount is the set of session ids each account lists.
func idsByAccount(tr *Tree) map[string][]string {
	out := map[string][]string{}
	for _, a := range tr.Accounts {
		out[a.Name] = nil
	}
	for _, e := range tr.Entries {
		out[e.Account] = append(out[e.Account], e.CLISessionID)
	}
	for _, v := range out {
		sort.Strings(v)
	}
	return out
}

func TestMirrorGivesEachAccountTheUnion(t *testing.T) {
	dir := copyTree(t)
	tr := scan(t, dir)
	os.Chmod(tr.Entries[5].Path, 0o600)
	plan := PlanMirror(tr)
	if len(plan.Copies) != 9 {
		t.Fatalf("%d copies, want 9: %+v", len(plan.Copies), plan.Copies)
	}
	for _, c := range plan.Copies {
		if err := c.Apply(); err != nil {
			t.Fatal(err)
		}
	}
	after := scan(t, dir)
	all := []string{"desk-active-2f4b", "desk-blocked-9c3a", "desk-bo-only-1a77", "desk-done-5b7d", "desk-legacy-0d6e"}
	for acct, ids := range idsByAccount(after) {
		if !reflect.DeepEqual(ids, all) {
			t.Errorf("%s lists %v, want %v", acct, ids, all)
		}
	}
	for _, c := range plan.Copies {
		src, _ := os.ReadFile(c.From.Path)
		dst, _ := os.ReadFile(c.To)
		if !bytes.Equal(src, dst) {
			t.Errorf("%s is not a byte copy of %s", c.To, c.From.Path)
		}
		sfi, _ := os.Stat(c.From.Path)
		dfi, _ := os.Stat(c.To)
		if sfi.Mode() != dfi.Mode() {
			t.Errorf("%s mode %v, source %v", c.To, dfi.Mode(), sfi.Mode())
		}
	}
	if got := filepath.Join(dir, SessionsDir, "acct-cy", "env-cy", "local_0b2.json"); !fileExists(got) {
		t.Errorf("no copy in the only env folder of acct-cy: %s", got)
	}
	noTempFiles(t, filepath.Join(dir, SessionsDir, "acct-cy", "env-cy"))
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func TestMirrorIsIdempotent(t *testing.T) {
	dir := copyTree(t)
	for _, c := range PlanMirror(scan(t, dir)).Copies {
		if err := c.Apply(); err != nil {
			t.Fatal(err)
		}
	}
	before := snapshot(t, dir)
	if again := PlanMirror(scan(t, dir)); len(again.Copies) != 0 {
		t.Fatalf("a second mirror plans %d copies: %+v", len(again.Copies), again.Copies)
	}
	if !reflect.DeepEqual(before, snapshot(t, dir)) {
		t.Fatal("planning wrote to the tree")
	}
}

func TestMirrorMatchesByCLISessionID(t *testing.T) {
	dir := copyTree(t)
	bo := filepath.Join(dir, SessionsDir, "acct-bo", "env-main")
	// acct-bo lists desk-done-5b7d under another file name; a file named
	// like the source but holding another session does not count.
	os.Rename(filepath.Join(bo, "local_0a1.json"), filepath.Join(bo, "local_renamed.json"))
	os.WriteFile(filepath.Join(bo, "local_0a3.json"), []byte(`{"cliSessionId":"desk-squatter","title":"t"}`), 0o644)
	plan := PlanMirror(scan(t, dir))
	for _, c := range plan.Copies {
		if c.Account == "acct-bo" && c.From.CLISessionID == "desk-done-5b7d" {
			t.Errorf("copied %s into acct-bo, which lists it as local_renamed.json", c.From.CLISessionID)
		}
		if c.To == filepath.Join(bo, "local_0a3.json") {
			t.Errorf("planned to replace %s", c.To)
		}
	}
	var skipped bool
	for _, s := range plan.Skipped {
		skipped = skipped || (strings.HasSuffix(s.Path, "local_0a3.json") && strings.Contains(s.Reason, "already exists"))
	}
	if !skipped {
		t.Errorf("the name clash is not reported: %+v", plan.Skipped)
	}
}

func TestMirrorSkipsAnAccountWithoutAClearEnvFolder(t *testing.T) {
	dir := copyTree(t)
	cy := filepath.Join(dir, SessionsDir, "acct-cy")
	os.MkdirAll(filepath.Join(cy, "env-other"), 0o755)
	os.MkdirAll(filepath.Join(dir, SessionsDir, "acct-dee"), 0o755)
	plan := PlanMirror(scan(t, dir))
	for _, c := range plan.Copies {
		if c.Account == "acct-cy" || c.Account == "acct-dee" {
			t.Errorf("copied into %s/%s", c.Account, c.Env)
		}
	}
	reasons := map[string]bool{}
	for _, s := range plan.Skipped {
		switch {
		case strings.Contains(s.Reason, "acct-cy has several env folders (env-cy, env-other)"):
			reasons["cy"] = true
		case strings.Contains(s.Reason, "acct-dee has no env folder"):
			reasons["dee"] = true
		}
	}
	if !reasons["cy"] || !reasons["dee"] {
		t.Fatalf("skips %+v", plan.Skipped)
	}
}

func TestMirrorNeverReplacesAFile(t *testing.T) {
	dir := copyTree(t)
	plan := PlanMirror(scan(t, dir))
	c := plan.Copies[0]
	os.WriteFile(c.To, []byte(`{"cliSessionId":"raced"}`), 0o644)
	if err := c.Apply(); !errors.Is(err, ErrExists) {
		t.Fatalf("Apply over a file that appeared: %v", err)
	}
	if b, _ := os.ReadFile(c.To); string(b) != `{"cliSessionId":"raced"}` {
		t.Fatalf("the file that appeared was replaced: %s", b)
	}
	noTempFiles(t, filepath.Dir(c.To))
}

func TestDecodeEntryRefusesWrongShapes(t *testing.T) {
	cases := map[string]string{
		"not JSON":               `{"cliSessionId":`,
		"array":                  `[1]`,
		"null":                   `null`,
		"two values":             `{} {}`,
		"id not a string":        `{"cliSessionId":42}`,
		"title not a string":     `{"title":{"a":1}}`,
		"cwd not a string":       `{"cwd":true}`,
		"archived not a boolean": `{"isArchived":"yes"}`,
		"id with a slash":        `{"cliSessionId":"a/b"}`,
		"id with a newline":      `{"cliSessionId":"a\nb"}`,
		"id padded":              `{"cliSessionId":" a"}`,
		"id too long":            `{"cliSessionId":"` + strings.Repeat("a", MaxSessionIDLen+1) + `"}`,
		"not UTF-8":              "{\"title\":\"\xff\"}",
		"oversized":              `{"pad":"` + strings.Repeat("x", MaxEntryBytes) + `"}`,
	}
	for name, in := range cases {
		if _, _, err := DecodeEntry([]byte(in)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
	f, _, err := DecodeEntry([]byte(`{"cliSessionId":null,"title":null,"isArchived":null,"extra":[1]}` + "\n"))
	if err != nil || f != (Fields{}) {
		t.Fatalf("nulls: %+v, %v", f, err)
	}
}

func FuzzDecodeEntry(f *testing.F) {
	ents, _ := filepath.Glob(filepath.Join(fixture, SessionsDir, "*", "*", "local_*.json"))
	for _, p := range ents {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Add([]byte(`{"cliSessionId":"s","isArchived":null}`))
	f.Add([]byte(`{"isArchived":true,"isArchived":false}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fields, obj, err := DecodeEntry(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not match ErrMalformed", err)
			}
			return
		}
		// Archiving keeps every other field and decodes back.
		obj[fieldArchived] = json.RawMessage("true")
		out, err := encodeEntry(obj, b)
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		got, obj2, err := DecodeEntry(out)
		if err != nil {
			t.Fatalf("re-decode %q: %v", out, err)
		}
		want := fields
		want.Archived = true
		if got != want || len(obj2) != len(obj) {
			t.Fatalf("fields %+v, want %+v (keys %d, want %d)", got, want, len(obj2), len(obj))
		}
	})
}
