package install

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The git commit guard: harn's region in a repository's hooks.
const (
	// GitBegin and GitEnd mark harn's region in a git hook script.
	GitBegin = "# harn:begin"
	GitEnd   = "# harn:end"
	// gitShebang starts a hook harn creates.
	gitShebang = "#!/bin/sh\n"
)

// GitHooks are the hooks the commit guard uses.
var GitHooks = []string{"pre-commit", "post-commit", "post-checkout"}

// ErrBadHook: a hook file holds a begin marker without its end (nothing is
// written), or cannot be read.
var ErrBadHook = errors.New("unreadable git hook")

// GitReport says what a git hook install or uninstall did, hook by hook.
type GitReport struct {
	Dir     string   `json:"dir"`
	Changed []string `json:"changed,omitempty"`
	// Chained names hooks harn moved aside (to HOOK.harn-chained) because
	// they were not shell scripts: harn's hook runs them first.
	Chained []string `json:"chained,omitempty"`
}

// gitRegion is harn's region for one hook: a hook that fails open. The
// pre-commit region stops the commit when harn refuses it (exit 4 from
// `harn hook git pre-commit`); any other trouble lets the commit go.
func gitRegion(hook, command, chained, flags string) string {
	var b strings.Builder
	b.WriteString(GitBegin + flags + " (managed by harn; `harn hook uninstall git` removes it)\n")
	if chained != "" {
		// The hook that was here before harn (a hook manager's binary):
		// it runs first, and its failure stops the commit as before.
		fmt.Fprintf(&b, "\"$(dirname \"$0\")/%s\" \"$@\" || exit $?\n", chained)
	}
	if hook == "pre-commit" {
		// Only harn's refusal (exit 4) stops the commit: a missing harn
		// or any other trouble lets it go.
		fmt.Fprintf(&b, "%s hook git %s \"$@\"\n[ $? -ne 4 ] || exit 4\n", shellQuote(command), hook)
	} else {
		fmt.Fprintf(&b, "%s hook git %s \"$@\" || :\n", shellQuote(command), hook)
	}
	b.WriteString(GitEnd + "\n")
	return b.String()
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// isShell tells whether a hook file is a shell script harn can append to:
// a shell shebang, and no `exec` on its last line (that would never come
// back to harn's region).
func isShell(b []byte) bool {
	if rest, _, _, _ := cutRegion(b); rest != nil {
		lines := strings.Split(strings.TrimSpace(string(rest)), "\n")
		if last := strings.TrimSpace(lines[len(lines)-1]); strings.HasPrefix(last, "exec ") {
			return false
		}
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	l := string(bytes.TrimSpace(line))
	if !strings.HasPrefix(l, "#!") {
		return false
	}
	for _, sh := range []string{"/sh", "/bash", "/zsh", "/dash", "env sh", "env bash", "env zsh"} {
		if strings.HasSuffix(l, sh) {
			return true
		}
	}
	return false
}

// Flags on harn's begin line, so that uninstall gives back the bytes that
// were there: the file was harn's own, or the user's text had no final
// newline.
const (
	flagCreated = " created"
	flagNoEOL   = " noeol"
)

// cutRegion returns b without harn's region (and the separator harn put
// before it); found is false when there is none. created tells that harn
// created the file.
func cutRegion(b []byte) (out []byte, found, created bool, err error) {
	i := bytes.Index(b, []byte(GitBegin))
	if i < 0 {
		return b, false, false, nil
	}
	j := bytes.Index(b[i:], []byte(GitEnd))
	if j < 0 {
		return nil, false, false, fmt.Errorf("%w: %q without %q; fix or remove it by hand", ErrBadHook, GitBegin, GitEnd)
	}
	end := i + j + len(GitEnd)
	if end < len(b) && b[end] == '\n' {
		end++
	}
	line, _, _ := bytes.Cut(b[i+len(GitBegin):], []byte("\n"))
	head := b[:i]
	created = bytes.Contains(line, []byte(flagCreated))
	switch {
	case created:
		head = bytes.TrimSuffix(head, []byte(gitShebang))
	case bytes.Contains(line, []byte(flagNoEOL)) && bytes.HasSuffix(head, []byte("\n\n")):
		head = head[:len(head)-2]
	case bytes.HasSuffix(head, []byte("\n\n")):
		head = head[:len(head)-1]
	}
	return append(append([]byte(nil), head...), b[end:]...), true, created, nil
}

// InstallGit puts harn's region in the hooks of the folder dir (the
// repository's `git rev-parse --git-path hooks`), keeping each hook's own
// text. A hook that is not a shell script (a hook manager's binary) is
// moved to HOOK.harn-chained and run first by the new one.
func InstallGit(dir, command string) (GitReport, error) {
	rep := GitReport{Dir: dir}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return rep, fmt.Errorf("install: hooks folder: %w", err)
	}
	for _, hook := range GitHooks {
		path := filepath.Join(dir, hook)
		old, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return rep, fmt.Errorf("%w: %s: %w", ErrBadHook, path, err)
		}
		chained := ""
		chainedPath := path + ".harn-chained"
		if _, serr := os.Stat(chainedPath); serr == nil {
			chained = hook + ".harn-chained"
		}
		var next []byte
		flags := ""
		switch {
		case len(old) == 0:
			next, flags = []byte(gitShebang), flagCreated
		case isShell(old):
			base, found, created, err := cutRegion(old)
			if err != nil {
				return rep, fmt.Errorf("%s: %w", path, err)
			}
			switch {
			case found && created && len(base) == 0:
				next, flags = []byte(gitShebang), flagCreated
			case bytes.HasSuffix(base, []byte("\n")):
				next = append(append([]byte(nil), base...), '\n')
			default:
				next, flags = append(append([]byte(nil), base...), '\n', '\n'), flagNoEOL
			}
		default:
			if err := os.Rename(path, chainedPath); err != nil {
				return rep, fmt.Errorf("install: %s: %w", path, err)
			}
			chained = hook + ".harn-chained"
			rep.Chained = append(rep.Chained, hook)
			next, flags = []byte(gitShebang), flagCreated
		}
		next = append(next, gitRegion(hook, command, chained, flags)...)
		if bytes.Equal(next, old) {
			continue
		}
		if err := writeAtomic(path, next, 0o755); err != nil {
			return rep, err
		}
		rep.Changed = append(rep.Changed, hook)
	}
	return rep, nil
}

// UninstallGit removes harn's region from the hooks in dir, keeping the
// rest; a hook left with nothing but its shebang is removed, and a hook
// harn moved aside is put back.
func UninstallGit(dir string) (GitReport, error) {
	rep := GitReport{Dir: dir}
	for _, hook := range GitHooks {
		path := filepath.Join(dir, hook)
		old, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return rep, fmt.Errorf("%w: %s: %w", ErrBadHook, path, err)
		}
		next, found, created, err := cutRegion(old)
		if err != nil {
			return rep, fmt.Errorf("%s: %w", path, err)
		}
		if !found {
			continue
		}
		chainedPath := path + ".harn-chained"
		_, cerr := os.Stat(chainedPath)
		switch {
		case created && len(next) == 0 && cerr == nil:
			if err := os.Rename(chainedPath, path); err != nil {
				return rep, fmt.Errorf("install: %s: %w", path, err)
			}
		case created && len(next) == 0:
			if err := os.Remove(path); err != nil {
				return rep, fmt.Errorf("install: %s: %w", path, err)
			}
		default:
			if err := writeAtomic(path, next, 0o755); err != nil {
				return rep, err
			}
		}
		rep.Changed = append(rep.Changed, hook)
	}
	return rep, nil
}
