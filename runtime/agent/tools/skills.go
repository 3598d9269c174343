package tools

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

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

// LoadSkills reads the skills of the folders in order; a name found twice
// keeps its first (so the project's shadows the user's). A folder that does
// not exist is skipped; a bad SKILL.md is logged and skipped.
func LoadSkills(dirs []string, log *slog.Logger) []Skill {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	seen := map[string]bool{}
	var out []Skill
	for _, d := range dirs {
		if d == "" {
			continue
		}
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if !e.IsDir() || len(out) == maxSkills {
				continue
			}
			dir := filepath.Join(d, e.Name())
			data, err := readSmall(filepath.Join(dir, "SKILL.md"), maxSkillBytes)
			if err != nil {
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

func readSmall(p string, n int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(io.LimitReader(f, n+1)); err != nil {
		return nil, err
	}
	if int64(b.Len()) > n {
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrConfig, p, n)
	}
	return b.Bytes(), nil
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
