package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/harn-dev/harn/util/safefs"
)

// MCPServer configures one MCP server: a stdio server (Command, split as
// a shell splits words, and Args; no shell runs it) or a streamable HTTP
// server (URL). Its tools are published with the provider "mcp:NAME".
type MCPServer struct {
	Name    string            `json:"-"`
	Type    string            `json:"type,omitempty"` // "stdio" (default with a command) or "http"
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
	// BearerTokenEnv names an environment variable holding the token an
	// HTTP server wants (Authorization: Bearer); the token itself never
	// sits in a config file.
	BearerTokenEnv string `json:"bearer_token_env,omitempty"`
}

var serverName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$`)

func (s MCPServer) validate() error {
	if !serverName.MatchString(s.Name) || strings.Contains(s.Name, "__") {
		return fmt.Errorf("%w: MCP server name %q: use 1 to 32 letters, digits, - or _ (no __)", ErrConfig, s.Name)
	}
	switch {
	case s.Type == "http" || (s.Type == "" && s.URL != "" && s.Command == ""):
		if !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
			return fmt.Errorf("%w: MCP server %s: url must be http:// or https://", ErrConfig, s.Name)
		}
		return checkBearerEnv(s)
	case s.Type == "stdio" || s.Type == "":
		if _, err := s.argv(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%w: MCP server %s: type %q; use stdio or http", ErrConfig, s.Name, s.Type)
	}
	return nil
}

func (s MCPServer) isHTTP() bool {
	return s.Type == "http" || (s.Type == "" && s.URL != "" && s.Command == "")
}

// argv is the stdio server's command line: Command's words, then Args.
func (s MCPServer) argv() ([]string, error) {
	w, err := SplitWords(s.Command)
	if err != nil {
		return nil, fmt.Errorf("%w: MCP server %s: %v", ErrConfig, s.Name, err)
	}
	w = append(w, s.Args...)
	if len(w) == 0 {
		return nil, fmt.Errorf("%w: MCP server %s has no command", ErrConfig, s.Name)
	}
	return w, nil
}

// ParseMCPFlag reads `NAME=COMMAND` (the --mcp flag of harn ask): a stdio
// server for one run.
func ParseMCPFlag(v string) (MCPServer, error) {
	name, cmd, ok := strings.Cut(v, "=")
	s := MCPServer{Name: strings.TrimSpace(name), Command: cmd}
	if !ok {
		return s, fmt.Errorf("%w: --mcp %q: use NAME=COMMAND", ErrConfig, v)
	}
	return s, s.validate()
}

// mcpFile is the shape of .harn/mcp.json, the one Claude Code's .mcp.json
// has, so a file can be copied across.
type mcpFile struct {
	Servers map[string]MCPServer `json:"mcpServers"`
}

// maxMCPFile bounds an MCP servers file.
const maxMCPFile = 1 << 20

// LoadMCPFile reads an MCP servers file through safefs (a file that is a
// symlink out of its folder is refused); a file that does not exist holds
// no servers.
func LoadMCPFile(p string) ([]MCPServer, error) {
	data, err := safefs.ReadFile(filepath.Dir(p), filepath.Base(p), maxMCPFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	return ParseMCP(data, p)
}

// ParseMCP reads the content of an MCP servers file (name says which, in
// errors). Unknown fields are refused, so that a typo is not a server
// silently misconfigured.
func ParseMCP(data []byte, name string) ([]MCPServer, error) {
	if len(data) > maxMCPFile {
		return nil, fmt.Errorf("%w: %s is over 1 MiB", ErrConfig, name)
	}
	var f mcpFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: %s: %v; the file holds {\"mcpServers\": {\"NAME\": {\"command\": \"...\"}}}", ErrConfig, name, err)
	}
	var out []MCPServer
	for n, s := range f.Servers {
		s.Name = n
		if err := s.validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// CommandLine is what the server runs, for a person to judge: its
// environment settings, then its words shell-quoted (a stdio server), or
// its URL (an HTTP one).
func (s MCPServer) CommandLine() string {
	if s.isHTTP() {
		return s.URL
	}
	var parts []string
	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, shellWord(k+"="+s.Env[k]))
	}
	w, err := s.argv()
	if err != nil {
		w = append([]string{s.Command}, s.Args...)
	}
	for _, x := range w {
		parts = append(parts, shellWord(x))
	}
	return strings.Join(parts, " ")
}

// shellWord quotes a word as a POSIX shell reads it back.
func shellWord(w string) string {
	if w != "" && strings.IndexFunc(w, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@%=,", r))
	}) < 0 {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// ProjectMCPFile is the project's MCP servers file.
func ProjectMCPFile(project string) string { return filepath.Join(project, ".harn", "mcp.json") }

// UserMCPFile is the node's (the user's) MCP servers file:
// $XDG_CONFIG_HOME/harn/mcp.json or ~/.config/harn/mcp.json.
func UserMCPFile() string {
	if d := UserSkillsDir(); d != "" {
		return filepath.Join(filepath.Dir(d), "mcp.json")
	}
	return ""
}

// mergeServers merges server lists; a later list's server replaces an
// earlier one of the same name.
func mergeServers(lists ...[]MCPServer) []MCPServer {
	by := map[string]MCPServer{}
	for _, l := range lists {
		for _, s := range l {
			by[s.Name] = s
		}
	}
	out := make([]MCPServer, 0, len(by))
	for _, s := range by {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// SplitWords splits a command line as a POSIX shell splits words: blanks
// separate, 'single quotes' keep everything, "double quotes" keep all but
// \" \\ \$ \` escapes, a backslash outside quotes escapes the next byte.
// Nothing is expanded: no variables, globs or operators.
func SplitWords(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	in := false // a word is open
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		case c == '\\':
			in = true
			if i+1 < len(s) {
				i++
				if s[i] != '\n' {
					cur.WriteByte(s[i])
				}
			}
		case c == '\'':
			in = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unclosed single quote in %q", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			in = true
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\\\"$`\n", s[i+1]) >= 0 {
					i++
					if s[i] == '\n' {
						continue
					}
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unclosed double quote in %q", s)
			}
		default:
			in = true
			cur.WriteByte(c)
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out, nil
}
