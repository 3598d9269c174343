package tools

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/harn-dev/harn/util/safefs"
	"github.com/harn-dev/harn/util/text"
)

// Skill bounds.
const (
	maxSkillBytes = 256 << 10
	maxSkills     = 256
)

// Skill is one folder with a SKILL.md: front matter with name and
// description, then the body the model reads once it is active.
type Skill struct {
	Name        string
	Description string
	Body        string
	Dir         string // the skill's folder
	Hash        string // contract hash: hex SHA-256 of SKILL.md
}

var skillName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// ParseSkill reads a SKILL.md: an optional front matter between two ---
// lines with `name:` and `description:` (the other keys are ignored), then
// the body. A file without a name takes its folder's.
func ParseSkill(data []byte, dir string) (Skill, error) {
	if len(data) > maxSkillBytes {
		return Skill{}, fmt.Errorf("%w: SKILL.md in %s is over %d bytes", ErrConfig, dir, maxSkillBytes)
	}
	s := Skill{Dir: dir, Hash: Hash(data)}
	src := strings.ReplaceAll(string(data), "\r\n", "\n")
	if rest, ok := strings.CutPrefix(src, "---\n"); ok {
		fm, body, found := strings.Cut(rest, "\n---")
		if !found {
			return Skill{}, fmt.Errorf("%w: SKILL.md in %s opens a front matter that never closes (---)", ErrConfig, dir)
		}
		sc := bufio.NewScanner(strings.NewReader(fm))
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			v = strings.Trim(strings.TrimSpace(v), `"'`)
			switch strings.TrimSpace(k) {
			case "name":
				s.Name = v
			case "description":
				s.Description = text.Sanitize(v) // a cloned project's file; discovery output may reach a terminal
			}
		}
		_, body, _ = strings.Cut(body, "\n") // the rest of the closing --- line
		src = body
	}
	s.Body = strings.TrimSpace(src)
	if s.Name == "" {
		s.Name = filepath.Base(dir)
	}
	if !skillName.MatchString(s.Name) {
		return Skill{}, fmt.Errorf("%w: skill name %q in %s: use letters, digits, - _ . (at most 64)", ErrConfig, s.Name, dir)
	}
	return s, nil
}

// UserSkillsDir is the user's skills folder: $XDG_CONFIG_HOME/harn/skills,
// or ~/.config/harn/skills.
func UserSkillsDir() string {
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "harn", "skills")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".config", "harn", "skills")
	}
	return ""
}

// Files are a directory's files read as the trust check saw them (the
// node's snapshot of a trusted project's .harn) or through safefs (the
// user's folders): slash names relative to it, never a symlink out of it.
type Files interface {
	ReadDir(name string) ([]fs.DirEntry, error)
	ReadFile(name string, max int64) ([]byte, error)
}

// SkillSource is one folder of skills: Sub in Files, shown as Dir.
type SkillSource struct {
	Files Files
	Sub   string // the folder of skills in Files ("." or "skills")
	Dir   string // where it is on disk, for Skill.Dir
}

// LoadSkills reads the skills of the folders in order, each through
// safefs (a SKILL.md that is a symlink out of its folder is skipped); a
// name found twice keeps its first (so the project's shadows the
// user's). A folder that does not exist is skipped; a bad SKILL.md is
// logged and skipped.
func LoadSkills(dirs []string, log *slog.Logger) []Skill {
	var srcs []SkillSource
	for _, d := range dirs {
		if d == "" {
			continue
		}
		sd, err := safefs.Open(d)
		if err != nil {
			continue
		}
		defer sd.Close()
		srcs = append(srcs, SkillSource{Files: sd, Sub: ".", Dir: d})
	}
	return LoadSkillsFrom(srcs, log)
}

// LoadSkillsFrom reads the skills of the sources in order, as LoadSkills.
func LoadSkillsFrom(srcs []SkillSource, log *slog.Logger) []Skill {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	seen := map[string]bool{}
	var out []Skill
	for _, src := range srcs {
		if src.Files == nil {
			continue
		}
		ents, err := src.Files.ReadDir(src.Sub)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if !e.IsDir() || len(out) == maxSkills {
				continue
			}
			dir := filepath.Join(src.Dir, e.Name())
			data, err := src.Files.ReadFile(path.Join(src.Sub, e.Name(), "SKILL.md"), maxSkillBytes)
			if err != nil {
				if !errors.Is(err, fs.ErrNotExist) {
					log.Warn("skill skipped", "dir", dir, "err", err)
				}
				continue
			}
			s, err := ParseSkill(data, dir)
			if err != nil {
				log.Warn("skill skipped", "dir", dir, "err", err)
				continue
			}
			if seen[s.Name] || isBuiltin(s.Name) {
				continue
			}
			seen[s.Name] = true
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// skillRefs finds the /name words of a prompt that name a known skill, in
// order, once each.
func skillRefs(text string, known func(string) bool) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range strings.Fields(text) {
		n, ok := strings.CutPrefix(w, "/")
		if !ok {
			continue
		}
		n = strings.TrimRight(n, ".,;:!?)")
		if n != "" && !seen[n] && known(n) {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}
