package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/presence"
)

// gitCmd runs the real git CLI in dir with a clean, fixed identity.
func gitCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// newRepo makes a repository named name in a temp dir, on branch main,
// with one commit.
func newRepo(t *testing.T, name string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gitCmd(t, dir, "init", "-q", "-b", "main")
	gitCmd(t, dir, "commit", "-q", "--allow-empty", "-m", "first")
	return dir
}

func mkdirs(t *testing.T, parts ...string) string {
	t.Helper()
	p := filepath.Join(parts...)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRepoAndBranchFromPlainFileReads: the hook finds the repository of a
// cwd by walking up to .git (a folder, or a gitdir: file of a worktree or
// a separate git dir) and names it after origin's URL, else its folder;
// the branch comes from HEAD and is empty when detached.
func TestRepoAndBranchFromPlainFileReads(t *testing.T) {
	cases := []struct {
		name       string
		setup      func(t *testing.T) string // returns the cwd
		want       hook.GitInfo
		wantInRepo bool
	}{
		{"no origin: the top-level folder's name, from a subfolder", func(t *testing.T) string {
			r := newRepo(t, "shop")
			return mkdirs(t, r, "src", "app")
		}, hook.GitInfo{Repo: "shop", Branch: "main"}, true},
		{"https origin with .git", func(t *testing.T) string {
			r := newRepo(t, "local-name")
			gitCmd(t, r, "remote", "add", "origin", "https://github.com/acme/storefront.git")
			return r
		}, hook.GitInfo{Repo: "storefront", Branch: "main"}, true},
		{"scp-like origin", func(t *testing.T) string {
			r := newRepo(t, "x")
			gitCmd(t, r, "remote", "add", "origin", "git@github.com:acme/billing.git")
			return r
		}, hook.GitInfo{Repo: "billing", Branch: "main"}, true},
		{"origin path with a trailing slash, other remotes ignored", func(t *testing.T) string {
			r := newRepo(t, "x")
			gitCmd(t, r, "remote", "add", "upstream", "https://example.com/other/upstream.git")
			gitCmd(t, r, "remote", "add", "origin", "/srv/git/ledger/")
			return r
		}, hook.GitInfo{Repo: "ledger", Branch: "main"}, true},
		{"a branch with slashes", func(t *testing.T) string {
			r := newRepo(t, "shop")
			gitCmd(t, r, "checkout", "-q", "-b", "feature/cart-v2")
			return r
		}, hook.GitInfo{Repo: "shop", Branch: "feature/cart-v2"}, true},
		{"detached HEAD has no branch", func(t *testing.T) string {
			r := newRepo(t, "shop")
			gitCmd(t, r, "checkout", "-q", "--detach")
			return r
		}, hook.GitInfo{Repo: "shop", Branch: ""}, true},
		{"linked worktree: its own branch, the repository's name", func(t *testing.T) string {
			r := newRepo(t, "shop")
			wt := filepath.Join(t.TempDir(), "shop-hotfix")
			gitCmd(t, r, "worktree", "add", "-q", "-b", "hotfix", wt)
			return mkdirs(t, wt, "pkg")
		}, hook.GitInfo{Repo: "shop", Branch: "hotfix"}, true},
		{"linked worktree with origin", func(t *testing.T) string {
			r := newRepo(t, "shop")
			gitCmd(t, r, "remote", "add", "origin", "https://git.example.com/team/webshop.git")
			wt := filepath.Join(t.TempDir(), "wt1")
			gitCmd(t, r, "worktree", "add", "-q", "-b", "wt1", wt)
			return wt
		}, hook.GitInfo{Repo: "webshop", Branch: "wt1"}, true},
		{"separate git dir (a gitdir: file)", func(t *testing.T) string {
			if _, err := exec.LookPath("git"); err != nil {
				t.Skip("git is not installed")
			}
			dir := mkdirs(t, t.TempDir(), "notes")
			gitCmd(t, dir, "init", "-q", "-b", "trunk", "--separate-git-dir", filepath.Join(t.TempDir(), "notes.git"))
			return dir
		}, hook.GitInfo{Repo: "notes", Branch: "trunk"}, true},
		{"outside any repository", func(t *testing.T) string {
			return mkdirs(t, t.TempDir(), "plain")
		}, hook.GitInfo{}, false},
		{"a relative cwd is not looked up", func(t *testing.T) string { return "src/app" }, hook.GitInfo{}, false},
		{"empty cwd", func(t *testing.T) string { return "" }, hook.GitInfo{}, false},
		{"a .git file that is not gitdir: is skipped", func(t *testing.T) string {
			d := mkdirs(t, t.TempDir(), "odd")
			if err := os.WriteFile(filepath.Join(d, ".git"), []byte("hello\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return d
		}, hook.GitInfo{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cwd := c.setup(t)
			got, ok := hook.RepoOf(cwd)
			if ok != c.wantInRepo || got.Repo != c.want.Repo || got.Branch != c.want.Branch {
				t.Fatalf("repoOf(%q) = %+v, %v; want %+v, %v", cwd, got, ok, c.want, c.wantInRepo)
			}
		})
	}
}

// TestRepoLookupIsBounded: the walk up stops after gitMaxLevels folders,
// so a cwd deeper than that below its repository finds nothing.
func TestRepoLookupIsBounded(t *testing.T) {
	r := newRepo(t, "deep")
	near := r
	for i := 0; i < hook.GitMaxLevels-1; i++ {
		near = filepath.Join(near, "d")
	}
	far := filepath.Join(near, "d")
	mkdirs(t, far)
	if got, ok := hook.RepoOf(near); !ok || got.Repo != "deep" {
		t.Fatalf("%d levels below: %+v %v; want found", hook.GitMaxLevels-1, got, ok)
	}
	if got, ok := hook.RepoOf(far); ok {
		t.Fatalf("%d levels below: found %+v; want the walk bounded", hook.GitMaxLevels, got)
	}
}

func TestRepoNameOfURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://github.com/acme/shop.git":  "shop",
		"https://github.com/acme/shop":      "shop",
		"https://github.com/acme/shop/":     "shop",
		"git@github.com:acme/shop.git":      "shop",
		"ssh://git@host:2222/acme/shop.git": "shop",
		"/srv/git/shop.git":                 "shop",
		"shop.git":                          "shop",
		"file:///C:/repos/shop":             "shop",
		"":                                  "",
		".git":                              "",
		"https://host/..":                   "",
	} {
		if got := hook.RepoNameOfURL(in); got != want {
			t.Errorf("repoNameOfURL(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestOriginURLFromConfig(t *testing.T) {
	cfg := `[core]
	bare = false
[remote "upstream"]
	url = https://example.com/up.git
# a comment
[Remote "origin"]
	fetch = +refs/heads/*:refs/remotes/origin/*
	URL = "git@example.com:team/api.git"
	url = https://second.example.com/ignored.git
[branch "main"]
	remote = origin
`
	if got := hook.OriginURL([]byte(cfg)); got != "git@example.com:team/api.git" {
		t.Fatalf("originURL = %q", got)
	}
	if got := hook.OriginURL([]byte("[remote \"Origin\"]\n\turl = x\n")); got != "" {
		t.Fatalf("subsection names are case-sensitive; got %q", got)
	}
}

// TestHookStampsRepoOnlyOnStartAndPrompt: repo and branch go on
// session.start and user_prompt.submit, not on tool events.
func TestHookStampsRepoOnlyOnStartAndPrompt(t *testing.T) {
	r := newRepo(t, "shop")
	now := time.Now()
	mk := func(typ, cwd string) presence.Event {
		e := presence.Event{SessionID: "s1", Type: typ, TS: now}
		e.SetAttr(presence.AttrCwd, cwd)
		return e
	}
	evs := []presence.Event{
		mk(presence.TypeSessionStart, r),
		mk(presence.TypeUserPromptSubmit, filepath.Join(r, "sub")),
		mk(presence.TypeToolPreUse, r),
		mk(presence.TypeUserPromptSubmit, t.TempDir()),
	}
	hook.StampRepo(evs)
	for i, want := range []map[string]any{
		{presence.AttrRepo: "shop", presence.AttrBranch: "main"},
		{presence.AttrRepo: "shop", presence.AttrBranch: "main"},
		{},
		{},
	} {
		for _, k := range []string{presence.AttrRepo, presence.AttrBranch} {
			got, has := evs[i].Attrs[k]
			w, want := want[k]
			if has != want || got != w {
				t.Errorf("event %d (%s): %s = %v (%v); want %v (%v)", i, evs[i].Type, k, got, has, w, want)
			}
		}
		if err := evs[i].Validate(); err != nil {
			t.Errorf("event %d: %v", i, err)
		}
	}
}

// BenchmarkRepoOf is the hook's added cost on a prompt: one lookup from a
// folder three levels inside a repository.
func BenchmarkRepoOf(b *testing.B) {
	dir := b.TempDir()
	cmd := exec.Command("git", "init", "-q", "-b", "main", dir)
	if err := cmd.Run(); err != nil {
		b.Skip("git:", err)
	}
	cwd := filepath.Join(dir, "a", "b", "c")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok := hook.RepoOf(cwd); !ok {
			b.Fatal("not found")
		}
	}
}
