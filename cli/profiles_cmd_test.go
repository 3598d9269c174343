package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/harn-dev/harn/node/tasks/taskwire"
)

// docsProfileTable is the profiles table between the markers of a doc:
// its header and rows, cells trimmed and without backticks.
func docsProfileTable(t *testing.T, file string) [][]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, "<!-- profiles:begin -->"), strings.Index(s, "<!-- profiles:end -->")
	if i < 0 || j < i {
		t.Fatalf("%s has no profiles table between <!-- profiles:begin --> and <!-- profiles:end -->", file)
	}
	var out [][]string
	for _, l := range strings.Split(strings.TrimSpace(s[i+len("<!-- profiles:begin -->"):j]), "\n") {
		if tableRuleLine(l) {
			continue
		}
		var row []string
		for _, c := range strings.Split(strings.Trim(strings.TrimSpace(l), "|"), "|") {
			row = append(row, strings.ReplaceAll(strings.TrimSpace(c), "`", ""))
		}
		out = append(out, row)
	}
	return out
}

func tableRuleLine(l string) bool {
	return strings.Trim(strings.TrimSpace(l), "|-: ") == ""
}

// TestTheDocsProfileTablesAreHarnProfiles: the profiles table of
// docs/agent.md is what `harn profiles` prints, cell for
// cell (the header case aside), and `harn profiles --json` is
// runtime.Profiles: the grants themselves.
func TestTheDocsProfileTablesAreHarnProfiles(t *testing.T) {
	var out bytes.Buffer
	if code := Main([]string{"profiles"}, strings.NewReader(""), &out, &out); code != 0 {
		t.Fatalf("harn profiles: %d %s", code, out.String())
	}
	printed := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := [][]string{profileHeader()}
	for _, p := range taskwire.Profiles() {
		want = append(want, profileRow(p))
	}
	if len(printed) != len(want) {
		t.Fatalf("harn profiles printed %d lines, want %d:\n%s", len(printed), len(want), out.String())
	}
	for i, row := range want {
		line := printed[i]
		for _, cell := range row {
			if !strings.Contains(line, cell) {
				t.Fatalf("harn profiles line %d lacks %q: %q", i, cell, line)
			}
			line = line[strings.Index(line, cell)+len(cell):]
		}
	}
	for _, file := range []string{"../docs/agent.md"} {
		doc := docsProfileTable(t, file)
		if len(doc) != len(want) {
			t.Fatalf("%s: %d rows, want %d (harn profiles)", file, len(doc), len(want))
		}
		for i := range want {
			if len(doc[i]) != len(want[i]) {
				t.Fatalf("%s row %d: %q, want %q", file, i, doc[i], want[i])
			}
			for k := range want[i] {
				if !strings.EqualFold(doc[i][k], want[i][k]) {
					t.Errorf("%s row %d cell %d: %q, harn profiles says %q", file, i, k, doc[i][k], want[i][k])
				}
			}
		}
	}
	out.Reset()
	if code := Main([]string{"profiles", "--json"}, strings.NewReader(""), &out, &out); code != 0 {
		t.Fatalf("harn profiles --json: %d", code)
	}
	var ps []taskwire.ProfileInfo
	if err := json.Unmarshal(out.Bytes(), &ps); err != nil {
		t.Fatal(err)
	}
	for i, p := range taskwire.Profiles() {
		g, _ := taskwire.Profile(p.Name)
		if ps[i].Name != p.Name || len(ps[i].Grants) != len(g) {
			t.Fatalf("--json profile %d: %+v", i, ps[i])
		}
	}
}
