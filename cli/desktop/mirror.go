package desktop

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// ErrExists means a copy's target file appeared since the plan was made;
// nothing was written.
var ErrExists = errors.New("desktop: target entry file already exists")

// Copy is one entry file to copy into another account.
type Copy struct {
	From    Entry
	Account string // the target account
	Env     string // the target env folder (it exists)
	To      string // the target path
}

// Skip is an entry that was left alone, and why.
type Skip struct {
	Path   string
	Reason string
}

// MirrorPlan is what mirroring would do: the copies that make every
// account list the union of the sessions, and what it cannot copy.
type MirrorPlan struct {
	Copies  []Copy
	Skipped []Skip
}

// PlanMirror plans the copies that give each account every session
// (matched by cliSessionId) that another account lists. An account has a
// session when any of its env folders holds an entry with that id, so a
// second run plans nothing. The copy goes into the target account's env
// folder of the same name as the source's, or into its only env folder;
// an account with none or several (none of the same name) is skipped, as
// is an entry with no cliSessionId. When accounts disagree about an entry,
// the most recently modified file is the source.
func PlanMirror(t *Tree) MirrorPlan {
	var plan MirrorPlan
	have := map[string]map[string]bool{} // account -> session ids
	for _, a := range t.Accounts {
		have[a.Name] = map[string]bool{}
	}
	source := map[string]Entry{}
	var ids []string
	for _, e := range t.Entries {
		if e.CLISessionID == "" {
			plan.Skipped = append(plan.Skipped, Skip{Path: e.Path, Reason: "no cliSessionId; it cannot be matched across accounts"})
			continue
		}
		have[e.Account][e.CLISessionID] = true
		s, ok := source[e.CLISessionID]
		if !ok {
			ids = append(ids, e.CLISessionID)
		}
		if !ok || e.ModTime.After(s.ModTime) {
			source[e.CLISessionID] = e
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		src := source[id]
		for _, a := range t.Accounts {
			if have[a.Name][id] {
				continue
			}
			env, why := targetEnv(a, src.Env)
			if env == "" {
				plan.Skipped = append(plan.Skipped, Skip{Path: src.Path,
					Reason: fmt.Sprintf("account %s %s; copy the file by hand", a.Name, why)})
				continue
			}
			to := filepath.Join(t.Dir, SessionsDir, a.Name, env, src.Name)
			if _, err := os.Lstat(to); !errors.Is(err, fs.ErrNotExist) {
				plan.Skipped = append(plan.Skipped, Skip{Path: src.Path,
					Reason: fmt.Sprintf("%s already exists with another session (or cannot be read); rename or remove it", to)})
				continue
			}
			plan.Copies = append(plan.Copies, Copy{From: src, Account: a.Name, Env: env, To: to})
		}
	}
	return plan
}

// targetEnv picks the env folder of account a for an entry from env, or
// says why there is none.
func targetEnv(a Account, env string) (string, string) {
	for _, e := range a.Envs {
		if e == env {
			return e, ""
		}
	}
	switch len(a.Envs) {
	case 0:
		return "", "has no env folder"
	case 1:
		return a.Envs[0], ""
	}
	return "", fmt.Sprintf("has several env folders (%s) and none named %s", strings.Join(a.Envs, ", "), env)
}

// Apply makes the copy: it reads the source again (its session id must be
// unchanged), and writes its bytes, unchanged, to the target atomically
// with the source's mode. An existing target is never replaced.
func (c Copy) Apply() error {
	f, _, b, mode, err := readEntry(c.From.Path)
	if err != nil {
		return err
	}
	if f.CLISessionID != c.From.CLISessionID {
		return fmt.Errorf("%w: %q now holds session %q, not %q; run the command again", ErrChanged, c.From.Path, f.CLISessionID, c.From.CLISessionID)
	}
	if _, err := os.Lstat(c.To); !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s; run the command again", ErrExists, c.To)
	}
	return writeNew(c.To, b, mode)
}
