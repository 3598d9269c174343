package cli

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"

	"github.com/harn-dev/harn/node/claims/claimwire"
	"github.com/harn-dev/harn/presence"
)

// Gemini CLI's write tools (its adapter reports no claim events).
var geminiWriteTools = []string{"write_file", "replace"}

// claimRequests turns a hook's writes into claim requests, one per
// repository: the paths of its claim.write events (Claude Code's
// Edit/Write/MultiEdit/NotebookEdit, Codex's apply_patch, Cursor's
// afterFileEdit) or of Gemini's write_file/replace, each made relative to
// its repository's top level. Paths outside any repository are not
// claimed. The lookup reads files only (gitinfo.go): no git process runs.
func claimRequests(agent string, in []byte, evs []presence.Event) []claimwire.Request {
	var p struct {
		Event   string `json:"hook_event_name"`
		Session string `json:"session_id"`
		Cwd     string `json:"cwd"`
		Tool    string `json:"tool_name"`
		Input   struct {
			FilePath string `json:"file_path"`
		} `json:"tool_input"`
	}
	_ = json.Unmarshal(in, &p)
	session := ""
	var paths []string
	for i := range evs {
		if evs[i].Type == presence.TypeClaimWrite {
			session = evs[i].SessionID
			paths = append(paths, evs[i].AttrStrings(presence.AttrPaths)...)
		}
	}
	if agent == "gemini" && p.Event == "BeforeTool" && slices.Contains(geminiWriteTools, p.Tool) && p.Input.FilePath != "" {
		fp := p.Input.FilePath
		if !filepath.IsAbs(fp) && p.Cwd != "" {
			fp = filepath.Join(p.Cwd, fp)
		}
		session, paths = p.Session, append(paths, filepath.Clean(fp))
	}
	if session == "" || len(paths) == 0 {
		return nil
	}
	phase := claimwire.PhasePre
	if p.Event == "afterFileEdit" {
		phase = claimwire.PhasePost
	}
	var out []claimwire.Request
	byRepo := map[string]int{}
	dirs := map[string]*gitInfo{}
	for _, abs := range paths {
		if !filepath.IsAbs(abs) {
			continue
		}
		dir := filepath.Dir(abs)
		info, seen := dirs[dir]
		if !seen {
			if gi, ok := repoOf(dir); ok {
				info = &gi
			}
			dirs[dir] = info
		}
		if info == nil {
			continue
		}
		rel, err := filepath.Rel(info.Top, abs)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			continue
		}
		repo := claimwire.RepoIdentity(info.Origin, info.Top)
		i, ok := byRepo[repo]
		if !ok {
			i = len(out)
			byRepo[repo] = i
			out = append(out, claimwire.Request{Session: session, Repo: repo, Phase: phase})
		}
		out[i].Paths = append(out[i].Paths, filepath.ToSlash(rel))
		out[i].Abs = append(out[i].Abs, abs)
	}
	return out
}

// warnOutput tells the agent of a held file without stopping it: a system
// message (Claude Code, Codex, Gemini CLI). Cursor's file-edit hook takes
// no answer: nothing is printed there.
func warnOutput(agent, reason string) []byte {
	if agent == "cursor" {
		return nil
	}
	b, _ := json.Marshal(map[string]string{"systemMessage": reason})
	return append(b, '\n')
}
