package cli

import "testing"

// FuzzParseConfig: a config file is outside input; parsing never panics,
// and what parses has no empty keys.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{"", "{}", `{"data-dir":"/x","join":["a:1","b:2"],"server":true}`,
		"data-dir = /x\n# c\nname: n1\n", "{not json", "novalue\n", `{"a":{"b":1}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseConfig(b)
		if err != nil {
			return
		}
		for k := range m {
			if k == "" && len(b) > 0 && b[0] != '{' {
				t.Fatalf("empty key from %q", b)
			}
		}
	})
}
