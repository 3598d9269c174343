package hook

import (
	"slices"
	"testing"
)

// TestConfigWorkspacesSection: [workspaces] holds one directory a line,
// bare or quoted, before or after [launchers]; JSON takes "workspaces".
func TestConfigWorkspacesSection(t *testing.T) {
	c, err := ParseConfigFile([]byte(`name = n1
[workspaces]
/srv/work
"/srv/with = sign"
# a comment
[launchers]
claude = ["claude", "-p"]
`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.workspaces, []string{"/srv/work", "/srv/with = sign"}) || len(c.launchers) != 1 || c.vals["name"] != "n1" {
		t.Fatalf("parsed %+v", c)
	}
	j, err := ParseConfigFile([]byte(`{"workspaces": ["/a", "/b"]}`))
	if err != nil || !slices.Equal(j.workspaces, []string{"/a", "/b"}) {
		t.Fatalf("JSON: %+v %v", j, err)
	}
	for _, bad := range []string{"[workspaces]\n[workspaces]\n", "[workspaces]\n\"unterminated\n", `{"workspaces": "/a"}`, `{"workspaces": [1]}`, "[other]\n"} {
		if _, err := ParseConfigFile([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
