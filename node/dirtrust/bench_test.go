package dirtrust

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkCheck is the trust check a harn session's open makes: a
// directory without .harn, and one with an mcp.json, a skill, an agent
// profile and a hook (trusted).
func BenchmarkCheck(b *testing.B) {
	p := filepath.Join(b.TempDir(), FileName)
	s, err := New(Config{Path: p, UID: os.Geteuid()})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Open(); err != nil {
		b.Fatal(err)
	}
	bare := b.TempDir()
	full := filepath.Join(b.TempDir(), "repo")
	for name, body := range map[string]string{".harn/mcp.json": mcpJSON, ".harn/skills/review/SKILL.md": "---\nname: review\n---\nR",
		".harn/agents/docs.md": "---\nname: docs\n---\nD", ".harn/hooks/on-start": "#!/bin/sh\n"} {
		f := filepath.Join(full, name)
		os.MkdirAll(filepath.Dir(f), 0o755)
		os.WriteFile(f, []byte(body), 0o644)
	}
	if _, _, err := s.Add(full, AddOptions{}); err != nil {
		b.Fatal(err)
	}
	for name, dir := range map[string]string{"no-harn": bare, "harn-trusted": full} {
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := s.Check(dir); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
