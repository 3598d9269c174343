package dirtrust

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/util/clock"
)

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

const mcpJSON = `{"mcpServers":{"demo":{"command":"/bin/demo --pid 'a b'","env":{"K":"v"}}}}`

// project makes a directory whose .harn has an MCP server, a skill, an
// agent profile and a hook.
func project(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	write(t, filepath.Join(dir, ".harn", "mcp.json"), mcpJSON)
	write(t, filepath.Join(dir, ".harn", "skills", "review", "SKILL.md"), "---\nname: review\n---\nR")
	write(t, filepath.Join(dir, ".harn", "agents", "docs.md"), "---\nname: docs\n---\nD")
	write(t, filepath.Join(dir, ".harn", "hooks", "on-start"), "#!/bin/sh\n")
	return dir
}

func store(t *testing.T, path string, uid int) *Store {
	t.Helper()
	s, err := New(Config{Path: path, Clock: clock.NewFake(time.Unix(1e9, 0)), UID: uid})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newStore(t *testing.T) (*Store, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), FileName)
	return store(t, p, os.Geteuid()), p
}

// TestADirectoryIsUntrustedUntilTrustAdd: its servers, skills, agents and
// hooks are read and named, with their commands, but not trusted; the
// notice names the command that trusts it; after Add the check trusts it
// and hands out exactly the files it digested.
func TestADirectoryIsUntrustedUntilTrustAdd(t *testing.T) {
	s, _ := newStore(t)
	dir := project(t)
	v, err := s.Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	if v.Trusted || v.Empty() || v.Why != "never trusted" || v.Digest == "" {
		t.Fatalf("%+v", v)
	}
	if len(v.Servers) != 1 || v.Servers[0].CommandLine() != `K=v /bin/demo --pid 'a b'` {
		t.Fatalf("servers %+v", v.Servers)
	}
	if strings.Join(v.Skills, ",") != "review" || strings.Join(v.Agents, ",") != "docs" || strings.Join(v.Hooks, ",") != "on-start" {
		t.Fatalf("skills %v agents %v hooks %v", v.Skills, v.Agents, v.Hooks)
	}
	n := v.Notice("n1")
	if !strings.Contains(n, "not trusted on node n1") || !strings.Contains(n, "demo") || !strings.HasSuffix(n, "`harn trust add "+v.Dir+"`") {
		t.Fatalf("notice %q", n)
	}
	e, v2, err := s.Add(dir, AddOptions{By: "op@n1"})
	if err != nil || !v2.Trusted || e.Digest != v.Digest || e.By != "op@n1" {
		t.Fatalf("add: %+v %+v %v", e, v2, err)
	}
	v, err = s.Check(dir)
	if err != nil || !v.Trusted || v.Notice("n1") != "" {
		t.Fatalf("after add: %+v %v", v, err)
	}
	if b, err := v.Files.ReadFile("mcp.json", 1<<20); err != nil || string(b) != mcpJSON {
		t.Fatalf("the snapshot's mcp.json: %q %v", b, err)
	}
	ents, err := v.Files.ReadDir("skills")
	if err != nil || len(ents) != 1 || ents[0].Name() != "review" || !ents[0].IsDir() {
		t.Fatalf("the snapshot's skills: %v %v", ents, err)
	}
}

// TestAChangedFileAsksAgain: a changed mcp.json, a new skill, a new hook
// or a removed agent each untrusts the directory until trusted again.
func TestAChangedFileAsksAgain(t *testing.T) {
	for name, change := range map[string]func(dir string){
		"mcp.json": func(dir string) {
			write(t, filepath.Join(dir, ".harn", "mcp.json"), `{"mcpServers":{"demo":{"command":"/bin/evil"}}}`)
		},
		"new skill":  func(dir string) { write(t, filepath.Join(dir, ".harn", "skills", "x", "SKILL.md"), "X") },
		"new hook":   func(dir string) { write(t, filepath.Join(dir, ".harn", "hooks", "sub", "h"), "X") },
		"gone agent": func(dir string) { os.Remove(filepath.Join(dir, ".harn", "agents", "docs.md")) },
	} {
		t.Run(name, func(t *testing.T) {
			s, _ := newStore(t)
			dir := project(t)
			if _, _, err := s.Add(dir, AddOptions{}); err != nil {
				t.Fatal(err)
			}
			change(dir)
			v, err := s.Check(dir)
			if err != nil || v.Trusted || v.Files.Len() == 0 || !strings.Contains(v.Why, "changed") {
				t.Fatalf("%+v %v", v, err)
			}
			if _, _, err := s.Add(dir, AddOptions{}); err != nil {
				t.Fatal(err)
			}
			if v, _ := s.Check(dir); !v.Trusted {
				t.Fatalf("trusted again: %+v", v)
			}
		})
	}
}

// TestTrustAddWithTheDigestShownRefusesAChange: the TUI's yes records the
// files the user was shown, or nothing.
func TestTrustAddWithTheDigestShownRefusesAChange(t *testing.T) {
	s, _ := newStore(t)
	dir := project(t)
	v, _ := s.Check(dir)
	write(t, filepath.Join(dir, ".harn", "mcp.json"), `{"mcpServers":{"demo":{"command":"/bin/evil"}}}`)
	if _, _, err := s.Add(dir, AddOptions{Digest: v.Digest}); !errors.Is(err, ErrChanged) {
		t.Fatalf("%v; want ErrChanged", err)
	}
	if len(s.List()) != 0 {
		t.Fatal("a refused add was recorded")
	}
}

// TestTrustIsRecordedDurablyAndPrivately: the record is 0600 and a new
// store (the node's next start) reads it back; Remove forgets.
func TestTrustIsRecordedDurablyAndPrivately(t *testing.T) {
	s, p := newStore(t)
	dir := project(t)
	if _, _, err := s.Add(dir, AddOptions{By: "op"}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the record: %v %v; want 0600", fi, err)
	}
	s2 := store(t, p, os.Geteuid())
	if v, _ := s2.Check(dir); !v.Trusted || len(s2.List()) != 1 {
		t.Fatalf("after a restart: %+v", v)
	}
	if ok, err := s2.Remove(dir); !ok || err != nil {
		t.Fatalf("remove: %v %v", ok, err)
	}
	if v, _ := store(t, p, os.Geteuid()).Check(dir); v.Trusted {
		t.Fatal("still trusted after remove")
	}
	// A record others may read is refused at open, naming the fix.
	os.Chmod(p, 0o644)
	s3, _ := New(Config{Path: p})
	if err := s3.Open(); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a loose record: %v", err)
	}
}

// TestAFailedWriteKeepsTheRecord: when the record cannot be written (a
// full disk), the add is refused and the previous record stays whole.
func TestAFailedWriteKeepsTheRecord(t *testing.T) {
	s, p := newStore(t)
	a, b := project(t), project(t)
	if _, _, err := s.Add(a, AddOptions{}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(p)
	if err := os.Mkdir(p+".tmp", 0o700); err != nil { // the temp file cannot be made
		t.Fatal(err)
	}
	if _, _, err := s.Add(b, AddOptions{}); err == nil {
		t.Fatal("an add whose record could not be written succeeded")
	}
	if v, _ := s.Check(b); v.Trusted || len(s.List()) != 1 {
		t.Fatal("a failed add is trusted in memory")
	}
	if after, _ := os.ReadFile(p); string(after) != string(before) {
		t.Fatalf("the record changed: %s", after)
	}
}

// otherOwned makes dir's .harn another uid's: chowned when this runs as
// root, else the store's uid is another one.
func otherOwned(t *testing.T, dir string) int {
	t.Helper()
	if os.Geteuid() != 0 {
		return os.Geteuid() + 1
	}
	filepath.Walk(filepath.Join(dir, ".harn"), func(p string, _ os.FileInfo, err error) error {
		if err == nil {
			os.Lchown(p, 65534, 65534)
		}
		return err
	})
	return 0
}

// TestAnotherUsersDirectoryNeedsAllowOtherOwner: a .harn another uid owns,
// or one others may write, is never trusted by a plain add (the error
// names the flag's command), is trusted with AllowOtherOwner, and a
// directory trusted as the user's own becomes untrusted once others may
// write it.
func TestAnotherUsersDirectoryNeedsAllowOtherOwner(t *testing.T) {
	dir := project(t)
	uid := otherOwned(t, dir)
	p := filepath.Join(t.TempDir(), FileName)
	s := store(t, p, uid)
	v, err := s.Check(dir)
	if err != nil || v.Trusted || !strings.Contains(v.Owner, "owned by uid") {
		t.Fatalf("%+v %v", v, err)
	}
	if n := v.Notice("n1"); !strings.Contains(n, "`harn trust add --allow-other-owner "+v.Dir+"`") {
		t.Fatalf("notice %q", n)
	}
	if _, _, err := s.Add(dir, AddOptions{}); !errors.Is(err, ErrOtherOwner) || !strings.Contains(err.Error(), "`harn trust add --allow-other-owner "+v.Dir+"`") {
		t.Fatalf("a plain add: %v; want ErrOtherOwner naming the flag", err)
	}
	if _, _, err := s.Add(dir, AddOptions{AllowOtherOwner: true}); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Check(dir); !v.Trusted {
		t.Fatalf("with --allow-other-owner: %+v", v)
	}

	mine := project(t)
	s2, _ := newStore(t)
	if _, _, err := s2.Add(mine, AddOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(mine, ".harn", "skills"), 0o777); err != nil {
		t.Fatal(err)
	}
	if v, _ := s2.Check(mine); v.Trusted || !strings.Contains(v.Why, "writable by others") {
		t.Fatalf("a trusted directory others may now write: %+v", v)
	}
}

// TestAFileLinkedOutOfTheProjectIsNeitherDigestedNorLoaded.
func TestAFileLinkedOutOfTheProjectIsNeitherDigestedNorLoaded(t *testing.T) {
	s, _ := newStore(t)
	base := t.TempDir()
	dir := filepath.Join(base, "repo")
	write(t, filepath.Join(base, "evil.json"), mcpJSON)
	os.MkdirAll(filepath.Join(dir, ".harn"), 0o755)
	if err := os.Symlink(filepath.Join(base, "evil.json"), filepath.Join(dir, ".harn", "mcp.json")); err != nil {
		t.Fatal(err)
	}
	v, err := s.Check(dir)
	if err != nil || !v.Empty() || len(v.Servers) != 0 || v.Notice("n") != "" {
		t.Fatalf("%+v %v", v, err)
	}
}

// TestOverTheBoundsNothingLoads: more hook files than the bound makes the
// directory unreadable: nothing loads and trust add is refused.
func TestOverTheBoundsNothingLoads(t *testing.T) {
	s, _ := newStore(t)
	dir := project(t)
	for i := 0; i <= maxFiles; i++ {
		write(t, filepath.Join(dir, ".harn", "hooks", fmt.Sprintf("h%03d", i)), "x")
	}
	v, err := s.Check(dir)
	if err != nil || v.Unreadable == "" || v.Files != nil || v.Trusted {
		t.Fatalf("%+v %v", v.Project, err)
	}
	if _, _, err := s.Add(dir, AddOptions{}); !errors.Is(err, ErrUnreadable) {
		t.Fatalf("%v; want ErrUnreadable", err)
	}
}

// TestConcurrentAddsAreAllRecorded: adds, checks and removes from many
// callers at once leave a record holding exactly the adds that stayed.
func TestConcurrentAddsAreAllRecorded(t *testing.T) {
	s, p := newStore(t)
	dirs := make([]string, 8)
	for i := range dirs {
		dirs[i] = project(t)
	}
	done := make(chan error, len(dirs))
	for i, d := range dirs {
		go func() {
			_, _, err := s.Add(d, AddOptions{})
			if err == nil {
				_, err = s.Check(d)
			}
			if err == nil && i%2 == 1 {
				_, err = s.Remove(d)
			}
			done <- err
		}()
	}
	for range dirs {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if got := len(store(t, p, os.Geteuid()).List()); got != len(dirs)/2 {
		t.Fatalf("the record holds %d directories, want %d", got, len(dirs)/2)
	}
}
