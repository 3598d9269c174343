// Package install registers `harn hook <agent>` in an agent's hook settings
// (any registered adapter that is an adapter.Installer: the adapter says
// where its agent keeps its hooks, in which layout and with which timeout
// unit, and where it reads its instructions) and removes it again. It edits
// only harn's own entries: every other key and hook of the file stays as the
// user wrote it, in its order. A changed file is backed up first and written
// atomically; an unreadable one is refused and left alone.
package install

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Errors callers match with errors.Is.
var (
	// ErrUnknownAgent: the agent has no hook settings harn can install.
	ErrUnknownAgent = errors.New("unknown agent")
	// ErrBadScope: the scope is neither user nor project, or its folder
	// is not given.
	ErrBadScope = errors.New("bad scope")
	// ErrBadSettings: the existing settings file is not valid JSON, or not
	// of the shape its agent uses. Nothing is written.
	ErrBadSettings = errors.New("unreadable settings file")
	// ErrBadCommand: the harn binary path is missing or not absolute.
	ErrBadCommand = errors.New("bad harn command")
	// ErrCommentsLost: the settings file has comments inside the part
	// harn rewrites; nothing is written unless Options.Yes.
	ErrCommentsLost = errors.New("comments would be lost")
)

// Scopes.
const (
	ScopeUser    = "user"
	ScopeProject = "project"
)

// Options says what to install where.
type Options struct {
	Agent            string // an installable agent (Agents)
	Scope            string // "user" (under Home) or "project" (under ProjectDir)
	Home, ProjectDir string
	// Command is the absolute path of the harn binary, or "harn" when
	// that name finds the same binary on PATH.
	Command string
	// Hook is the binary the hook entries run when it is not Command:
	// harn-hook beside harn (its absolute path, or "harn-hook" when that
	// is on PATH), which starts faster. The instructions still name
	// Command, which runs every command.
	Hook string
	// DryRun computes the change and writes nothing.
	DryRun bool
	// Yes writes even when comments inside the rewritten part of a
	// settings file with comments cannot be kept.
	Yes bool
	// Getenv reads the environment for the user scope's config folders
	// (adapter.SettingsSpec.EnvDir); nil reads none.
	Getenv func(string) string
	// Now is when the command runs. The files carry no time; it is kept so
	// that callers can log the run with the report.
	Now time.Time
	// RemoteApprove makes the hook wait for permission decisions from the
	// mesh (agents with an adapter.SettingsSpec.ApproveEvent), up to
	// ApproveWait (0: the default).
	RemoteApprove bool
	ApproveWait   time.Duration
}

// Report says what Install or Uninstall did (or, in a dry run, would do).
type Report struct {
	Path    string
	Changed bool
	// Added, Replaced and Removed name the native events whose harn entry
	// was added, replaced (a stale or duplicate one rewritten) or removed.
	Added, Replaced, Removed []string
	// LostComments are the lines of comments the change drops (or, when
	// refused, would drop).
	LostComments []int
	// Backup is the copy of the previous file, when one was made.
	Backup string
	// Before and After are the file's content ("" before when it did not
	// exist); After equals Before when nothing changed.
	Before, After []byte
	DryRun        bool
	// Instructions is the edit of the agent's instruction file.
	Instructions InstructionsReport
}

// BackupSuffix is appended to a settings file's name for its backup.
const BackupSuffix = ".harn-backup"

// Path returns the settings file o's agent and scope use.
func Path(o Options) (string, error) {
	s, ok := specs()[o.Agent]
	if !ok {
		return "", fmt.Errorf("%w %q: harn installs hooks for %s", ErrUnknownAgent, o.Agent, strings.Join(Agents(), ", "))
	}
	var base string
	switch o.Scope {
	case ScopeUser:
		if s.envDir != "" && o.Getenv != nil {
			if d := o.Getenv(s.envDir); d != "" {
				return filepath.Join(filepath.Clean(d), s.file), nil
			}
		}
		base = o.Home
	case ScopeProject:
		base = o.ProjectDir
	default:
		return "", fmt.Errorf("%w %q: use %q or %q", ErrBadScope, o.Scope, ScopeUser, ScopeProject)
	}
	if base == "" {
		return "", fmt.Errorf("%w: the %s scope needs its folder (home or project directory)", ErrBadScope, o.Scope)
	}
	return filepath.Join(base, s.dir, s.file), nil
}

// BareCommand is the hook command's binary when `harn` on PATH is the
// binary that installs.
const BareCommand = "harn"

// BareHookCommand is the hook command's binary when harn-hook (the hook
// alone, beside harn) is on PATH.
const BareHookCommand = "harn-hook"

// hookBin is the binary the hook entries run: o.Hook, else o.Command.
func (o Options) hookBin() string {
	if o.Hook != "" {
		return o.Hook
	}
	return o.Command
}

// Install registers harn's hook for every native event the agent's adapter
// maps. It is idempotent: a second run changes nothing and writes nothing.
func Install(o Options) (Report, error) {
	if o.Command == "" || (!filepath.IsAbs(o.Command) && o.Command != BareCommand) {
		return Report{}, fmt.Errorf("%w: %q; give the absolute path of the harn binary", ErrBadCommand, o.Command)
	}
	if o.Hook != "" && !filepath.IsAbs(o.Hook) && o.Hook != BareHookCommand {
		return Report{}, fmt.Errorf("%w: %q; give the absolute path of the harn-hook binary", ErrBadCommand, o.Hook)
	}
	cmd := hookCommand(o.hookBin(), o.Agent) + o.hookFlags()
	r, err := edit(o, func(s agentSpec, top *object, r *Report) (bool, error) {
		var modified bool
		var err error
		r.Added, r.Replaced, modified, err = s.install(top, cmd)
		return modified, err
	})
	if err == nil {
		r.Instructions, err = InstallInstructions(o)
	}
	return r, err
}

// Uninstall removes exactly harn's entries for the agent, dropping matcher
// groups and event keys they leave empty. A missing file is no change.
func Uninstall(o Options) (Report, error) {
	r, err := edit(o, func(s agentSpec, top *object, r *Report) (bool, error) {
		var err error
		r.Removed, err = s.uninstall(top)
		return len(r.Removed) > 0, err
	})
	if err == nil {
		r.Instructions, err = UninstallInstructions(o)
	}
	return r, err
}

func edit(o Options, change func(agentSpec, *object, *Report) (bool, error)) (Report, error) {
	path, err := Path(o)
	if err != nil {
		return Report{}, err
	}
	r := Report{Path: path, DryRun: o.DryRun}
	// Write through a symlinked settings file (dotfile setups), not over it.
	target := path
	if t, err := filepath.EvalSymlinks(path); err == nil {
		target = t
	}
	before, mode, err := read(target)
	if err != nil {
		return r, err
	}
	r.Before, r.After = before, before
	spec := specs()[o.Agent]
	clean, comments := before, []span(nil)
	if spec.jsonc {
		if clean, comments, err = stripComments(before); err != nil {
			return r, fmt.Errorf("%w: %s: %w; fix the file or move it aside, then run again", ErrBadSettings, path, err)
		}
	}
	top, err := parseSettings(clean)
	if err != nil {
		return r, fmt.Errorf("%w: %s: %w; fix the file or move it aside, then run again", ErrBadSettings, path, err)
	}
	old := slices.Clone(top)
	modified, err := change(spec, &top, &r)
	if err != nil {
		return r, fmt.Errorf("%w: %s: %w; fix the file or move it aside, then run again", ErrBadSettings, path, err)
	}
	if !modified {
		return r, nil
	}
	r.Changed = true
	if len(comments) > 0 {
		// Keep the file as the user wrote it and rewrite only "hooks".
		r.After, r.LostComments, err = spliceHooks(before, clean, comments, old, top)
	} else {
		r.After, err = render(top)
	}
	if err != nil {
		return r, err
	}
	if len(r.LostComments) > 0 && !o.Yes && !o.DryRun {
		return r, fmt.Errorf("%w: %s: the comments on %s sit inside \"hooks\", which harn rewrites; run again with --yes to write anyway (the old file is kept as %s), or move them out of \"hooks\"",
			ErrCommentsLost, path, lineList(r.LostComments), filepath.Base(path)+BackupSuffix)
	}
	if o.DryRun {
		return r, nil
	}
	if before != nil {
		r.Backup = path + BackupSuffix
		if err := writeAtomic(target+BackupSuffix, before, mode); err != nil {
			return r, fmt.Errorf("backing up %s: %w", path, err)
		}
	}
	if err := writeAtomic(target, r.After, mode); err != nil {
		return r, fmt.Errorf("writing %s: %w", path, err)
	}
	return r, nil
}

// read returns the file's content and mode, or nil and 0644 when it does
// not exist.
func read(path string) ([]byte, fs.FileMode, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0o644, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("reading %s: %w", path, err)
	}
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	return b, mode, nil
}

// parseSettings reads a settings file; an absent or blank file is empty.
func parseSettings(b []byte) (object, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return object{}, nil
	}
	if !json.Valid(b) {
		var v any
		err := json.Unmarshal(b, &v)
		return nil, fmt.Errorf("not valid JSON (%w)", err)
	}
	o, err := parseObject(b)
	if err != nil {
		return nil, fmt.Errorf("the top level is not a JSON object")
	}
	return o, nil
}

// render writes the settings with two-space indentation and a final newline.
func render(top object) ([]byte, error) {
	var b bytes.Buffer
	if err := json.Indent(&b, top.raw(), "", "  "); err != nil {
		return nil, fmt.Errorf("encoding settings: %w", err)
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// writeAtomic replaces path with data: a temporary file in the same folder,
// synced, then renamed over path, and the folder synced. Missing folders
// are made with 0755.
func writeAtomic(path string, data []byte, mode fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.Chmod(mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync() // best effort: not every platform syncs folders
		_ = d.Close()
	}
	return nil
}

// Summary is a short human-readable account of the report: the settings
// file, then the instruction file.
func (r Report) Summary() string { return r.settingsSummary() + r.instructionsLine() }

func (r Report) settingsSummary() string {
	var b strings.Builder
	b.WriteString(r.Path)
	if r.DryRun {
		b.WriteString(" (dry run: nothing written)")
	}
	b.WriteByte('\n')
	if !r.Changed {
		b.WriteString("  no change: nothing to add or remove\n")
		return b.String()
	}
	verb := map[bool]string{true: "would ", false: ""}[r.DryRun]
	if len(r.LostComments) > 0 {
		fmt.Fprintf(&b, "  %sdrop the comments on %s (inside \"hooks\")\n", verb, lineList(r.LostComments))
	}
	if len(r.Added) > 0 {
		fmt.Fprintf(&b, "  %sadd %d: %s\n", verb, len(r.Added), strings.Join(r.Added, ", "))
	}
	if len(r.Replaced) > 0 {
		fmt.Fprintf(&b, "  %sreplace %d: %s\n", verb, len(r.Replaced), strings.Join(r.Replaced, ", "))
	}
	if len(r.Removed) > 0 {
		fmt.Fprintf(&b, "  %sremove %d: %s\n", verb, len(r.Removed), strings.Join(r.Removed, ", "))
	}
	if len(r.Added) == 0 && len(r.Replaced) == 0 && len(r.Removed) == 0 {
		fmt.Fprintf(&b, "  %supdate the file's format version\n", verb)
	}
	if r.Backup != "" {
		fmt.Fprintf(&b, "  backup: %s\n", r.Backup)
	}
	return b.String()
}
