package tools

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Errors a call can end with. Run wraps one of them (with %w) in the error
// it returns next to a Result whose IsError is set.
var (
	ErrUnknownTool     = errors.New("tools: unknown tool")
	ErrBadArgs         = errors.New("tools: bad arguments")
	ErrOutsideWorkdir  = errors.New("tools: path outside the working directory")
	ErrProtected       = errors.New("tools: a protected path reached through a symlink")
	ErrNoMatch         = errors.New("tools: edit: old_string not found")
	ErrAmbiguous       = errors.New("tools: edit: old_string matches more than once")
	ErrTimeout         = errors.New("tools: timed out")
	ErrNotLoaded       = errors.New("tools: tool not loaded in this task")
	ErrContractChanged = errors.New("tools: the tool's contract or binding changed since it was loaded")
	ErrServer          = errors.New("tools: MCP server failed")
	ErrClosed          = errors.New("tools: toolbox closed")
	ErrConfig          = errors.New("tools: bad configuration")
	// ErrOutlived: a stopped call left a process running that its kill
	// could not reach (it left the call's process group and still holds
	// its output), so what the call did is not known to be over. The loop
	// reports the call outcome_unknown.
	ErrOutlived = errors.New("tools: a process the call started outlived its stop")
)

// Providers of the capabilities a Toolbox publishes.
const (
	ProviderCore   = "core"   // the workspace tools
	ProviderHarn   = "harn"   // the discovery tools
	ProviderSkills = "skills" // skills found in the skills folders
	MCPPrefix      = "mcp:"   // + server name: an MCP server's tools
)

// Bounds of what one call reads, takes and returns.
const (
	DefaultMaxOutput = 32 << 10 // bytes of Result.Content
	MaxArgsBytes     = 1 << 20  // bytes of a call's arguments
	maxFileBytes     = 8 << 20  // a file read whole (edit, grep)
	defaultReadLines = 2000
	maxGlobResults   = 1000
	maxGrepResults   = 500
	maxWalkEntries   = 200000
)

// Hash is the contract hash of a schema: the hex SHA-256 of its bytes.
func Hash(schema []byte) string {
	h := sha256.Sum256(schema)
	return hex.EncodeToString(h[:])
}

// EstimateTokens is the admission estimate of a text: a token per four
// bytes, rounded up, plus a small per-item overhead. The loop reconciles
// it with what the provider reports.
func EstimateTokens(parts ...string) int {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	return (n+3)/4 + 8
}

// decodeArgs decodes a model's arguments into v: one JSON object (empty
// or null counts as {}), no unknown fields, nothing after it, at most
// MaxArgsBytes.
func decodeArgs(raw json.RawMessage, v any) error {
	if len(raw) > MaxArgsBytes {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrBadArgs, len(raw), MaxArgsBytes)
	}
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		t = []byte("{}")
	}
	if t[0] != '{' {
		return fmt.Errorf("%w: arguments must be a JSON object", ErrBadArgs)
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrBadArgs, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: data after the arguments object", ErrBadArgs)
	}
	return nil
}

// bound cuts s to at most n bytes at a rune boundary and says what was cut.
func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	note := fmt.Sprintf("\n[output cut: %d of %d bytes shown]", n, len(s))
	cut := n - len(note)
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + note
}

// localPath turns a model's path into one relative to dir, refusing what
// leads out of it. Absolute paths inside dir are accepted. Symbolic links
// are confined later by os.Root, which refuses links that leave dir.
func localPath(dir, p string) (string, error) {
	if p == "" {
		p = "."
	}
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("%w: path holds a NUL byte", ErrBadArgs)
	}
	if filepath.IsAbs(p) {
		rel, err := filepath.Rel(filepath.Clean(dir), filepath.Clean(p))
		if err != nil {
			return "", fmt.Errorf("%w: %s", ErrOutsideWorkdir, p)
		}
		p = rel
	}
	p = filepath.Clean(p)
	if !filepath.IsLocal(p) && p != "." {
		return "", fmt.Errorf("%w: %s (paths stay under %s)", ErrOutsideWorkdir, p, dir)
	}
	return p, nil
}

// openRoot opens the session's working directory as the root every file
// tool works under.
func openRoot(dir string) (*os.Root, error) {
	if dir == "" || !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("%w: the session has no absolute working directory (%q)", ErrConfig, dir)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: working directory: %v", ErrConfig, err)
	}
	return r, nil
}
