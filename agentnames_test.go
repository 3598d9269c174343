package main

import (
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// agentName matches the name of an agent harn has an adapter for.
var agentName = regexp.MustCompile(`(?i)claude|codex|cursor|gemini`)

// notAnAgent are identifiers of libraries that contain an agent's name as
// a word of their own (a text input's cursor line).
var notAnAgent = regexp.MustCompile(`^Cursor(Line|Style|Mode|Blink|Up|Down|Start|End|Column|Row)$`)

// agentNameSpots are the files of cli/ and node/ that may name an agent,
// and why. Everything else asks the agent's adapter through the registry
// (presence/adapter/all).
var agentNameSpots = map[string]string{
	// `harn claude-desktop` tidies Claude Desktop's sidebar: an app's
	// data folder, not an agent's hooks.
	"cli/claude_desktop_cmd.go": "Claude Desktop's sidebar",
	"cli/desktop/":              "Claude Desktop's sidebar",
	// The screen model's cursor (vt's CursorPosition), not the agent.
	"node/hosted/screen.go": "a terminal's cursor",
}

// TestCliAndNodeNameNoAgent: adding an agent touches its adapter folder
// and one registration line, so the code of cli/ and node/ (comments
// aside) names no agent: no `== "codex"`, no per-agent switch, no import
// of one adapter. Help text takes its examples from the registry.
func TestCliAndNodeNameNoAgent(t *testing.T) {
	for _, root := range []string{"cli", "node"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			slash := filepath.ToSlash(path)
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			for spot := range agentNameSpots {
				if slash == spot || (strings.HasSuffix(spot, "/") && strings.HasPrefix(slash, spot)) {
					return nil
				}
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			fset := token.NewFileSet()
			f := fset.AddFile(path, -1, len(src))
			var s scanner.Scanner
			s.Init(f, src, nil, 0) // comments are skipped
			for {
				pos, tok, lit := s.Scan()
				if tok == token.EOF {
					break
				}
				if (tok == token.STRING || tok == token.IDENT || tok == token.CHAR) && agentName.MatchString(lit) && !(tok == token.IDENT && notAnAgent.MatchString(lit)) {
					t.Errorf("%s: names an agent (%s): ask its adapter through presence/adapter/all instead", fset.Position(pos), lit)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
