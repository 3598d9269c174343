package dirtrust

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/harn-dev/harn/runtime/agent/tools"
	"github.com/harn-dev/harn/util/safefs"
	"github.com/harn-dev/harn/util/secretfile"
	"github.com/harn-dev/harn/util/text"
)

// HarnDir is the folder of a project whose files trust covers.
const HarnDir = ".harn"

// Bounds of what Check reads of a project.
const (
	maxFiles     = 512
	maxTotal     = 16 << 20
	maxFile      = 1 << 20 // mcp.json, a hook
	maxAgentFile = 64 << 10
	maxSkillFile = 256 << 10
	maxHookDepth = 4
)

// Project is what Check read of a directory: the files that run or load
// from it, their digest, and whether its ownership is safe.
type Project struct {
	Dir    string    // absolute, symlinks resolved
	Digest string    // hex SHA-256 over the files' names and contents
	Files  *Snapshot // what was digested, for the session to load; nil: none
	// Servers are .harn/mcp.json's (ServersErr: why it does not parse);
	// Skills, Agents and Hooks name the rest.
	Servers    []tools.MCPServer
	ServersErr string
	Skills     []string
	Agents     []string
	Hooks      []string
	// Owner says why the directory is not safely the node user's: it,
	// its .harn, or a file in it is another uid's, or others may write
	// it. "" when it is.
	Owner string
	// Unreadable says why its files cannot be read whole (over the
	// bounds): then nothing of it loads.
	Unreadable string
}

// Empty reports a directory with nothing that runs or loads: nothing to
// trust, nothing to say.
func (p Project) Empty() bool { return p.Files.Len() == 0 && p.Unreadable == "" }

// Verdict is a directory's project and whether it is trusted on this node.
type Verdict struct {
	Project
	Trusted bool
	Why     string // when not trusted: why
	Entry   *Entry // when trusted: its record
}

// Check reads dir's .harn files (through safefs: nothing linked out of
// dir) and says whether they are trusted: recorded with the same digest,
// and, when another uid owns them or others may write them, recorded
// with AllowOtherOwner. An error means dir cannot be read at all (it does
// not exist, or it is in the node's data dir).
func (s *Store) Check(dir string) (Verdict, error) {
	p, err := s.read(dir)
	v := Verdict{Project: p}
	if err != nil {
		return v, err
	}
	e, ok := s.entry(p.Dir)
	switch {
	case p.Unreadable != "":
		v.Why = p.Unreadable
	case !ok:
		v.Why = "never trusted"
	case e.Digest != p.Digest:
		v.Why = "its .harn files changed since it was trusted"
	case p.Owner != "" && !e.OtherOwner:
		v.Why = p.Owner
	default:
		v.Trusted, v.Entry = true, &e
	}
	return v, nil
}

// read reads dir's project.
func (s *Store) read(dir string) (Project, error) {
	d, err := safefs.Open(dir)
	if err != nil {
		return Project{Dir: dir}, fmt.Errorf("dirtrust: %w", err)
	}
	defer d.Close()
	p := Project{Dir: d.Path()}
	st, err := d.Stat(".")
	if err != nil {
		return p, err
	}
	if !st.IsDir() {
		return p, fmt.Errorf("%w: %s", ErrNotDir, dir)
	}
	r := &reader{d: d, uid: s.cfg.UID, snap: &Snapshot{files: map[string][]byte{}}}
	r.owner(".", st)
	hst, err := d.Stat(HarnDir)
	if err != nil || !hst.IsDir() {
		p.Owner = r.why
		return p, nil // no .harn folder: nothing runs or loads from here
	}
	r.owner(HarnDir, hst)
	r.file("mcp.json", maxFile)
	for _, e := range r.list("agents") {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".md") {
			if r.file("agents/"+e.Name(), maxAgentFile) {
				p.Agents = append(p.Agents, strings.TrimSuffix(e.Name(), ".md"))
			}
		}
	}
	for _, e := range r.list("skills") {
		if r.file("skills/"+e.Name()+"/SKILL.md", maxSkillFile) {
			p.Skills = append(p.Skills, e.Name())
		}
	}
	r.walk("hooks", 0, &p.Hooks)
	p.Owner = r.why
	if r.over != "" {
		p.Unreadable = r.over
		p.Skills, p.Agents, p.Hooks = nil, nil, nil
		return p, nil
	}
	if r.snap.Len() == 0 {
		return p, nil
	}
	p.Files, p.Digest = r.snap, r.snap.digest()
	if b, err := r.snap.ReadFile("mcp.json", maxFile); err == nil {
		servers, err := tools.ParseMCP(b, filepath.Join(p.Dir, HarnDir, "mcp.json"))
		if err != nil {
			p.ServersErr = err.Error()
		}
		p.Servers = servers
	}
	return p, nil
}

// reader reads one project's .harn files into a snapshot, bounded, and
// notes the first unsafe owner or mode on its way.
type reader struct {
	d     *safefs.Dir
	uid   int
	snap  *Snapshot
	total int
	why   string // the first unsafe owner or mode
	over  string // a bound passed
}

// owner notes name's owner or mode when unsafe.
func (r *reader) owner(name string, fi fs.FileInfo) {
	if r.why != "" {
		return
	}
	if uid, ok := fileUID(fi); ok && uid != r.uid && uid != 0 {
		r.why = fmt.Sprintf("%s is owned by uid %d, not the node's user (uid %d)", shown(name), uid, r.uid)
		return
	}
	if fi.Mode().Perm()&0o022 != 0 {
		r.why = fmt.Sprintf("%s is writable by others (mode %04o)", shown(name), fi.Mode().Perm())
	}
}

func shown(name string) string {
	if name == "." {
		return "the directory"
	}
	return name
}

// list lists a folder of .harn (none when it does not exist).
func (r *reader) list(sub string) []fs.DirEntry {
	name := HarnDir + "/" + sub
	st, err := r.d.Stat(name)
	if err != nil || !st.IsDir() {
		return nil
	}
	r.owner(name, st)
	ents, err := r.d.ReadDir(name)
	if err != nil {
		return nil
	}
	return ents
}

// file reads one file of .harn into the snapshot; false when it is not
// there or is refused (a link out, not regular, over its bound): then it
// does not load either.
func (r *reader) file(sub string, max int64) bool {
	if r.over != "" {
		return false
	}
	name := HarnDir + "/" + sub
	b, st, err := r.d.ReadFileInfo(name, max)
	if errors.Is(err, safefs.ErrTooLarge) {
		r.over = fmt.Sprintf("%s is over %d bytes", name, max)
		return false
	}
	if err != nil {
		return false
	}
	r.owner(name, st)
	if dir := path.Dir(name); strings.Count(dir, "/") > 1 { // a skill's folder (its parent was listed)
		if st, err := r.d.Stat(dir); err == nil {
			r.owner(dir, st)
		}
	}
	r.total += len(b)
	if r.snap.Len() >= maxFiles || r.total > maxTotal {
		r.over = fmt.Sprintf("its .harn files are over %d files or %d MiB", maxFiles, maxTotal>>20)
		return false
	}
	r.snap.files[sub] = b
	return true
}

// walk reads every file under .harn/sub (hooks), depth-bounded.
func (r *reader) walk(sub string, depth int, names *[]string) {
	if depth > maxHookDepth {
		r.over = fmt.Sprintf("%s/%s is nested over %d folders deep", HarnDir, sub, maxHookDepth)
		return
	}
	for _, e := range r.list(sub) {
		child := sub + "/" + e.Name()
		st, err := r.d.Stat(HarnDir + "/" + child)
		if err != nil {
			continue
		}
		if st.IsDir() {
			r.walk(child, depth+1, names)
			continue
		}
		if r.file(child, maxFile) {
			*names = append(*names, strings.TrimPrefix(child, "hooks/"))
		}
	}
}

// Summary says what the project runs or loads: "MCP servers demo, x;
// skills review; agent profiles docs".
func (p Project) Summary() string {
	var parts []string
	if len(p.Servers) > 0 {
		n := make([]string, len(p.Servers))
		for i, s := range p.Servers {
			n[i] = s.Name
		}
		parts = append(parts, "the MCP servers of .harn/mcp.json ("+strings.Join(n, ", ")+")")
	} else if p.Files != nil && p.Files.has("mcp.json") {
		parts = append(parts, ".harn/mcp.json")
	}
	for _, k := range []struct {
		what  string
		names []string
	}{{"skills", p.Skills}, {"agent profiles", p.Agents}, {"hooks", p.Hooks}} {
		if len(k.names) > 0 {
			parts = append(parts, "its "+k.what+" ("+strings.Join(k.names, ", ")+")")
		}
	}
	return text.OneLine(text.Clip(strings.Join(parts, ", "), 400))
}

// TrustCommand is the command that trusts the directory as it is: with
// --allow-other-owner when its ownership needs it.
func (p Project) TrustCommand() string {
	if p.Owner != "" {
		return "harn trust add --allow-other-owner " + secretfile.ShellQuote(p.Dir)
	}
	return "harn trust add " + secretfile.ShellQuote(p.Dir)
}

// Notice is the one line a session's start says when the directory's
// files did not load (node names this node): what did not load, why, and
// the command that trusts it. "" when it is trusted or has nothing.
func (v Verdict) Notice(node string) string {
	if v.Trusted || v.Empty() {
		return ""
	}
	if v.Unreadable != "" {
		return fmt.Sprintf("harn: %s: its .harn files did not load: %s", secretfile.ShellQuote(v.Dir), text.OneLine(v.Unreadable))
	}
	why := v.Why
	if v.Owner != "" && why != v.Owner {
		why += "; " + v.Owner
	}
	return fmt.Sprintf("harn: %s is not trusted on node %s (%s), so %s did not load; review them, then run `%s`",
		secretfile.ShellQuote(v.Dir), text.OneLine(node), text.OneLine(why), v.Summary(), v.TrustCommand())
}

// Snapshot is a project's .harn files as Check read them: what a trusted
// session loads (tools.Files, subagent.Files). Names are slash paths
// relative to .harn. It is immutable.
type Snapshot struct {
	files map[string][]byte
}

// Len is how many files it holds.
func (s *Snapshot) Len() int {
	if s == nil {
		return 0
	}
	return len(s.files)
}

func (s *Snapshot) has(name string) bool {
	_, ok := s.files[name]
	return ok
}

// ReadFile returns a file's content (at most max bytes: over is refused).
func (s *Snapshot) ReadFile(name string, max int64) ([]byte, error) {
	b, ok := s.files[path.Clean(name)]
	if !ok {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrNotExist}
	}
	if int64(len(b)) > max {
		return nil, &fs.PathError{Op: "read", Path: name, Err: safefs.ErrTooLarge}
	}
	return append([]byte(nil), b...), nil
}

// ReadDir lists a folder of the snapshot, sorted.
func (s *Snapshot) ReadDir(name string) ([]fs.DirEntry, error) {
	name = path.Clean(name)
	prefix := name + "/"
	if name == "." {
		prefix = ""
	}
	seen := map[string]bool{}
	var out []fs.DirEntry
	for f := range s.files {
		rest, ok := strings.CutPrefix(f, prefix)
		if !ok {
			continue
		}
		first, _, sub := strings.Cut(rest, "/")
		if seen[first] {
			continue
		}
		seen[first] = true
		out = append(out, entry{name: first, dir: sub})
	}
	if len(out) == 0 {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// digest is the hex SHA-256 over the sorted names and their contents'
// hashes.
func (s *Snapshot) digest() string {
	names := make([]string, 0, len(s.files))
	for n := range s.files {
		names = append(names, n)
	}
	sort.Strings(names)
	h := sha256.New()
	h.Write([]byte("harn-dirtrust-v1\n"))
	for _, n := range names {
		sum := sha256.Sum256(s.files[n])
		fmt.Fprintf(h, "%s\x00%d\x00%s\n", n, len(s.files[n]), hex.EncodeToString(sum[:]))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// entry is a name in a Snapshot's listing.
type entry struct {
	name string
	dir  bool
}

func (e entry) Name() string { return e.name }
func (e entry) IsDir() bool  { return e.dir }
func (e entry) Type() fs.FileMode {
	if e.dir {
		return fs.ModeDir
	}
	return 0
}
func (e entry) Info() (fs.FileInfo, error) { return nil, fs.ErrInvalid }
