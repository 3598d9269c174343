package install

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/presence/adapter/all"
)

// InstructionsVersion stamps the instructions harn writes. `harn doctor`
// reports a region of another version (or edited text inside it) as drift.
const InstructionsVersion = 1

// The markers of harn's region in an instruction file. The begin marker
// carries the version: <!-- harn:begin v1 -->.
const (
	regionBeginPrefix = "<!-- harn:begin v"
	regionBeginSuffix = " -->"
	regionEnd         = "<!-- harn:end -->"
)

// maxInstructionFile bounds what harn reads of an instruction file.
const maxInstructionFile = 4 << 20

// ErrBadRegion: an instruction file holds a harn begin marker without its
// end (or the reverse); nothing is written.
var ErrBadRegion = errors.New("install: broken harn region in an instruction file")

// instructionsText is what every agent is told. It is short on purpose:
// the agent reads it on every session.
const instructionsText = `## harn (coordination with other agents)

This machine runs harn, which shows what each agent works on and keeps two
agents from editing the same file.

- At the start of each piece of work, declare it: ` + "`harn agents set-task \"<what you are doing>\"`" + `.
- When you wait on a person, say so: ` + "`harn agents lifecycle blocked --reason \"<what you need>\"`" + `;
  when you resume: ` + "`harn agents lifecycle active`" + `.
- Declare ` + "`harn agents lifecycle done`" + ` only after your checks (build, tests) pass.
- If a write is refused because another agent holds the file, do not work around it:
  wait, ask the holder, or ask the operator (` + "`harn agents release-claim --session ID`" + `).
  Release files you no longer need with ` + "`harn agents release-claim PATH`" + `.
`

// instrSpecs are the agents' instruction files (their adapter's
// adapter.InstructionsSpec), by name.
var instrSpecs = sync.OnceValue(instructionSpecs)

func instructionSpecs() map[string]adapter.InstructionsSpec {
	out := map[string]adapter.InstructionsSpec{}
	for _, n := range all.Installable() {
		if is, _ := all.Install(n); is.Instructions != nil {
			out[n] = *is.Instructions
		}
	}
	return out
}

// InstructionsPath is the instruction file o's agent reads in o's scope.
func InstructionsPath(o Options) (string, error) {
	s, ok := instrSpecs()[o.Agent]
	if !ok {
		return "", fmt.Errorf("%w %q: harn installs instructions for %s", ErrUnknownAgent, o.Agent, strings.Join(Agents(), ", "))
	}
	switch o.Scope {
	case ScopeUser:
		if s.EnvDir != "" && o.Getenv != nil {
			if d := o.Getenv(s.EnvDir); d != "" {
				return filepath.Join(filepath.Clean(d), s.File), nil
			}
		}
		if o.Home == "" {
			return "", fmt.Errorf("%w: the user scope needs the home folder", ErrBadScope)
		}
		return filepath.Join(o.Home, s.UserDir, s.File), nil
	case ScopeProject:
		if o.ProjectDir == "" {
			return "", fmt.Errorf("%w: the project scope needs the project folder", ErrBadScope)
		}
		return filepath.Join(o.ProjectDir, s.ProjectFile), nil
	}
	return "", fmt.Errorf("%w %q: use %q or %q", ErrBadScope, o.Scope, ScopeUser, ScopeProject)
}

// Region returns harn's region for the current version, markers included,
// with a final newline, for a harn that is `harn` on PATH.
func Region() string { return RegionFor(BareCommand) }

// RegionFor is harn's region naming bin as the command the agent runs:
// the same binary as the hooks (Options.Command), "harn" when `harn` on
// PATH is this binary, else its absolute path (quoted for a shell).
func RegionFor(bin string) string {
	return regionBeginPrefix + strconv.Itoa(InstructionsVersion) + regionBeginSuffix + "\n" + instructionsFor(bin) + regionEnd + "\n"
}

// instructionsFor is instructionsText with its commands run by bin.
func instructionsFor(bin string) string {
	if bin == "" || bin == BareCommand {
		return instructionsText
	}
	return instructionsWith(shellWord(bin))
}

// instructionsWith is instructionsText with "harn" in its commands
// replaced by word, as written.
func instructionsWith(word string) string {
	return strings.ReplaceAll(instructionsText, "`"+BareCommand+" ", "`"+word+" ")
}

// firstCommand marks the first command of instructionsText, to find the
// binary a region names.
const firstCommand = " agents set-task "

// currentBody reports whether body is this version's instructions with
// any binary in its commands.
func currentBody(body string) bool {
	i := strings.Index(body, "`")
	j := strings.Index(body, firstCommand)
	if i < 0 || j <= i+1 {
		return false
	}
	return body == instructionsWith(body[i+1:j])
}

// region is where harn's region sits in a file: [start, end) covers the
// markers and the end marker's newline.
type region struct {
	start, end int
	version    int // 0 when the begin marker's version does not parse
	body       string
}

// findRegion locates harn's region in b. ok is false when there is none;
// err wraps ErrBadRegion when only one of its markers is there.
func findRegion(b []byte) (region, bool, error) {
	i := bytes.Index(b, []byte(regionBeginPrefix))
	j := bytes.Index(b, []byte(regionEnd))
	switch {
	case i < 0 && j < 0:
		return region{}, false, nil
	case i < 0 || j < 0 || j < i:
		return region{}, false, fmt.Errorf("%w: a %q marker has no partner; remove the stray marker", ErrBadRegion, "harn:begin/harn:end")
	}
	line := b[i:]
	if k := bytes.IndexByte(line, '\n'); k >= 0 {
		line = line[:k]
	}
	r := region{start: i, end: j + len(regionEnd)}
	if r.end < len(b) && b[r.end] == '\n' {
		r.end++
	}
	v := strings.TrimSuffix(strings.TrimPrefix(string(line), regionBeginPrefix), regionBeginSuffix)
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
		r.version = n
	}
	if hdr := i + len(line) + 1; hdr <= j {
		r.body = string(b[hdr:j])
	}
	return r, true, nil
}

// withRegion returns b with harn's region in place: replaced where it is,
// else appended after a blank line.
func withRegion(b []byte, front string) ([]byte, error) {
	return withRegionOf(b, front, Region())
}

// withRegionOf is withRegion with the region reg.
func withRegionOf(b []byte, front, reg string) ([]byte, error) {
	r, ok, err := findRegion(b)
	if err != nil {
		return nil, err
	}
	if ok {
		out := append([]byte(nil), b[:r.start]...)
		out = append(out, reg...)
		return append(out, b[r.end:]...), nil
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return []byte(front + reg), nil
	}
	out := append([]byte(nil), b...)
	if !bytes.HasSuffix(out, []byte("\n")) {
		out = append(out, '\n')
	}
	out = append(out, '\n')
	return append(out, reg...), nil
}

// withoutRegion returns b without harn's region (and the blank line harn
// put before it); what is left of harn's own front matter alone counts as
// empty.
func withoutRegion(b []byte, front string) ([]byte, bool, error) {
	r, ok, err := findRegion(b)
	if err != nil || !ok {
		return b, false, err
	}
	head := b[:r.start]
	if bytes.HasSuffix(head, []byte("\n\n")) {
		head = head[:len(head)-1]
	}
	out := append(append([]byte(nil), head...), b[r.end:]...)
	if len(bytes.TrimSpace(out)) == 0 || front != "" && strings.TrimSpace(string(out)) == strings.TrimSpace(front) {
		out = nil
	}
	return out, true, nil
}

// InstructionsReport says what an instruction edit did (or would do).
type InstructionsReport struct {
	Path          string
	Changed       bool
	Removed       bool // the file was harn's alone and is gone
	Before, After []byte
}

// InstallInstructions writes harn's region into the instruction file of
// o's agent and scope, leaving the rest of the file as it was.
func InstallInstructions(o Options) (InstructionsReport, error) {
	reg := RegionFor(o.Command)
	return editInstructions(o, func(b []byte, s adapter.InstructionsSpec) ([]byte, error) { return withRegionOf(b, s.Front, reg) })
}

// UninstallInstructions removes harn's region; a file left empty (or
// holding only harn's front matter) is removed.
func UninstallInstructions(o Options) (InstructionsReport, error) {
	return editInstructions(o, func(b []byte, s adapter.InstructionsSpec) ([]byte, error) {
		out, _, err := withoutRegion(b, s.Front)
		return out, err
	})
}

func editInstructions(o Options, change func([]byte, adapter.InstructionsSpec) ([]byte, error)) (InstructionsReport, error) {
	path, err := InstructionsPath(o)
	if err != nil {
		return InstructionsReport{}, err
	}
	r := InstructionsReport{Path: path}
	target := path
	if t, err := filepath.EvalSymlinks(path); err == nil {
		target = t
	}
	before, mode, err := readBounded(target)
	if err != nil {
		return r, err
	}
	after, err := change(before, instrSpecs()[o.Agent])
	if err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	r.Before, r.After = before, after
	if bytes.Equal(before, after) {
		return r, nil
	}
	r.Changed = true
	if o.DryRun {
		r.Removed = after == nil && before != nil
		return r, nil
	}
	if after == nil {
		r.Removed = true
		if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return r, fmt.Errorf("removing %s: %w", path, err)
		}
		return r, nil
	}
	if err := writeAtomic(target, after, mode); err != nil {
		return r, fmt.Errorf("writing %s: %w", path, err)
	}
	return r, nil
}

func readBounded(path string) ([]byte, fs.FileMode, error) {
	b, mode, err := read(path)
	if err == nil && len(b) > maxInstructionFile {
		return nil, 0, fmt.Errorf("%w: %s is larger than %d bytes", ErrBadSettings, path, maxInstructionFile)
	}
	return b, mode, err
}

// InstructionsStatus is what an instruction file holds of harn's region.
type InstructionsStatus struct {
	Path    string
	Present bool
	// Version is the region's stamped version; Current says the region
	// is exactly what this harn writes.
	Version int
	Current bool
}

// InspectInstructions reads the instruction file of o's agent and scope;
// it never writes.
func InspectInstructions(o Options) (InstructionsStatus, error) {
	path, err := InstructionsPath(o)
	if err != nil {
		return InstructionsStatus{}, err
	}
	st := InstructionsStatus{Path: path}
	b, _, err := readBounded(path)
	if err != nil {
		return st, err
	}
	r, ok, err := findRegion(b)
	if err != nil {
		return st, fmt.Errorf("%s: %w", path, err)
	}
	if !ok {
		return st, nil
	}
	st.Present, st.Version = true, r.version
	st.Current = string(b[r.start:r.end]) == RegionFor(o.Command) ||
		(r.version == InstructionsVersion && currentBody(r.body))
	return st, nil
}

// Diff is a line diff of before and after: the lines between their common
// head and tail, "-" removed and "+" added, under a "--- path" header.
func Diff(path string, before, after []byte) string {
	if bytes.Equal(before, after) {
		return ""
	}
	a, b := splitLines(before), splitLines(after)
	head := 0
	for head < len(a) && head < len(b) && a[head] == b[head] {
		head++
	}
	tail := 0
	for tail < len(a)-head && tail < len(b)-head && a[len(a)-1-tail] == b[len(b)-1-tail] {
		tail++
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- %s\n+++ %s\n@@ line %d @@\n", path, path, head+1)
	for _, l := range a[head : len(a)-tail] {
		sb.WriteString("-" + l + "\n")
	}
	for _, l := range b[head : len(b)-tail] {
		sb.WriteString("+" + l + "\n")
	}
	return sb.String()
}

func splitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// instructionsLine is the Summary's line for the instruction file.
func (r Report) instructionsLine() string {
	ir := r.Instructions
	if ir.Path == "" {
		return ""
	}
	verb := map[bool]string{true: "would ", false: ""}[r.DryRun]
	switch {
	case !ir.Changed:
		return fmt.Sprintf("%s\n  instructions: no change\n", ir.Path)
	case ir.Removed:
		return fmt.Sprintf("%s\n  instructions: %sremove harn's region and the file (it held nothing else)\n", ir.Path, verb)
	case !bytes.Contains(ir.After, []byte(regionBeginPrefix)):
		return fmt.Sprintf("%s\n  instructions: %sremove harn's region\n", ir.Path, verb)
	case bytes.Contains(ir.Before, []byte(regionBeginPrefix)):
		return fmt.Sprintf("%s\n  instructions: %supdate harn's region to v%d\n", ir.Path, verb, InstructionsVersion)
	}
	return fmt.Sprintf("%s\n  instructions: %sadd harn's region v%d\n", ir.Path, verb, InstructionsVersion)
}
