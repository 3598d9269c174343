package hook

import (
	"testing"
)

// FuzzParseConfig: a config file is outside input; parsing never panics,
// what parses has no empty keys, and every launcher it yields passes the
// launcher checks.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{"", "{}", `{"data-dir":"/x","join":["a:1","b:2"],"server":true}`,
		"data-dir = /x\n# c\nname: n1\n", "{not json", "novalue\n", `{"a":{"b":1}}`,
		"name = n1\n[launchers]\nclaude = [\"claude\", \"-p\"]\n", "[launchers]\nx = \"sh\"\n", "[other]\n",
		`{"launchers":{"codex":["codex","exec","--json"]}}`, `{"launchers":{"":[""]}}`, "[launchers]\na: [\"b\"]\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseConfigFile(b)
		if err != nil {
			return
		}
		for k := range c.vals {
			if k == "" && len(b) > 0 && b[0] != '{' {
				t.Fatalf("empty key from %q", b)
			}
		}
		if err := c.launchers.Check(); err != nil {
			t.Fatalf("a launcher that parsed fails its checks: %v (from %q)", err, b)
		}
	})
}
