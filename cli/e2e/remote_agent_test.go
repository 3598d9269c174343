package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
)

// harn's own agent is no back door: the attacks a member that a node's
// --remote-control names could make through a harn session there (its
// own provider URL, a workdir in the data dir, a profile that runs
// commands), and the provider key's leaks, each run against real nodes.

// without is environ without the variables named.
func without(environ []string, names ...string) []string {
	var out []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		keep := true
		for _, n := range names {
			keep = keep && k != n
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}

// attackerModel plays a malicious model: its first answer runs a shell
// command (touching marker, then id, env and a look at the data dir),
// and once it sees a tool result it ends the turn.
func attackerModel(t *testing.T, marker, dataDir string) *modeltest.Server {
	t.Helper()
	m := modeltest.New(t)
	cmd := `touch ` + marker + `; id; env; cat ` + filepath.Join(dataDir, "http.token")
	m.SetFallback(func(req map[string]any) modeltest.Reply {
		if len(toolResults(req)) > 0 {
			return modeltest.Text("done")
		}
		return modeltest.Calls(true, modeltest.Call{ID: "c1", Name: "shell", Args: `{"command":` + modeltest.JS(cmd) + `}`})
	})
	return m
}

// noHarnSession fails when m hosts a harn session.
func noHarnSession(t *testing.T, m *meshNode, what string) {
	t.Helper()
	for _, s := range m.list(true) {
		if s.Agent == "harn" {
			t.Fatalf("%s opened a harn session on %s: %+v", what, m.name, s)
		}
	}
}

// headersHold reports whether any header of the server's requests holds s.
func headersHold(m *modeltest.Server, s string) bool {
	for _, h := range m.Headers() {
		for _, vs := range h {
			for _, v := range vs {
				if strings.Contains(v, s) {
					return true
				}
			}
		}
	}
	return false
}

// TestARemoteHarnStartNamingAProviderURLIsRefused: s0 has a provider key
// and no provider URL, and names n1 in --remote-control (--remote-exec
// none). A start from n1 that names its own model's URL is refused (exit
// 16), whatever else it asks: the attacker's model gets no request, so
// neither s0's key nor a turn; no session opens. s0's own operator may
// name a URL: the session runs, with no key of s0's.
func TestARemoteHarnStartNamingAProviderURLIsRefused(t *testing.T) {
	ws := t.TempDir()
	s0, n1 := trustedMesh(t, "HARN_REMOTE_CONTROL=n1", "HARN_PROVIDER_KEY=sk-s0-secret", "HARN_WORKSPACE="+ws)
	evil := attackerModel(t, filepath.Join(ws, "ran"), s0.dataDir)
	for _, extra := range [][]string{nil, {"--profile", "full"}, {"--workdir", s0.dataDir}} {
		args := append([]string{"task", "start", "--node", "s0", "--agent", "harn", "--provider-url", evil.URL(), "--model", "test-model"}, extra...)
		refused(t, "a remote start naming a provider URL "+strings.Join(extra, " "), n1.harn("", append(args, "run id and env")...), "by node s0")
	}
	refused(t, "a remote start naming a provider URL", n1.harn("", "task", "start", "--node", "s0", "--agent", "harn",
		"--provider-url", evil.URL(), "--model", "test-model", "x"), "drop --provider-url")
	if n := len(evil.Requests()); n != 0 {
		t.Fatalf("the caller's model got %d requests from s0", n)
	}
	noHarnSession(t, s0, "a refused remote start")

	// s0's own operator (its CLI without a key) names another URL: the
	// session runs, and s0's key does not go there.
	other := modeltest.New(t, modeltest.Text("hello"))
	r := run(t, without(s0.hookEnv(), "HARN_PROVIDER_KEY"), "", "task", "start", "--agent", "harn", "--provider-url", other.URL(),
		"--model", "test-model", "--workdir", ws, "--json", "hi")
	if r.code != 0 {
		t.Fatalf("a local start naming a URL: %v", r)
	}
	requestsAtLeast(t, other, 1)
	if headersHold(other, "sk-s0-secret") {
		t.Fatal("s0 sent its key to a URL its operator's caller named")
	}
}

// TestARemoteHarnSessionRunsWithTheTargetsProviderInItsWorkspace: n1's
// environment names its own provider and key; a start on s0 takes s0's
// (its URL, its key) and works in s0's workspace. A workdir that is the
// data dir, in it, a link into it, or anywhere outside the workspace is
// refused (exit 16).
func TestARemoteHarnSessionRunsWithTheTargetsProviderInItsWorkspace(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	if err := os.MkdirAll(filepath.Join(ws, "proj"), 0o700); err != nil {
		t.Fatal(err)
	}
	good, evil := modeltest.New(t), modeltest.New(t)
	good.SetFallback(func(map[string]any) modeltest.Reply { return modeltest.Text("from s0's own model") })
	s0, n1 := trustedMesh(t, "HARN_REMOTE_CONTROL=n1", "HARN_PROVIDER_URL="+good.URL(), "HARN_PROVIDER_KEY=sk-s0", "HARN_WORKSPACE="+ws)
	link := filepath.Join(ws, "innocent")
	if err := os.Symlink(s0.dataDir, link); err != nil {
		t.Fatal(err)
	}
	n1env := append(n1.hookEnv(), "HARN_PROVIDER_URL="+evil.URL(), "HARN_PROVIDER_KEY=sk-n1")
	start := func(extra ...string) result {
		args := append([]string{"task", "start", "--node", "s0", "--agent", "harn", "--model", "test-model", "--json"}, extra...)
		return run(t, n1env, "", append(args, "hello from n1")...)
	}
	for _, dir := range []string{s0.dataDir, filepath.Join(s0.dataDir, "tls"), link, base, s0.root, "/"} {
		refused(t, "a remote workdir "+dir, start("--workdir", dir), "outside its workspaces")
	}
	noHarnSession(t, s0, "a refused workdir")

	for _, c := range []struct{ dir, want string }{{"", ws}, {filepath.Join(ws, "proj"), filepath.Join(ws, "proj")}} {
		var args []string
		if c.dir != "" {
			args = []string{"--workdir", c.dir}
		}
		r := start(args...)
		if r.code != 0 {
			t.Fatalf("a remote start in the workspace: %v", r)
		}
		var st taskResultJSON
		mustJSON(t, r.stdout, &st)
		s0.waitTask(st.Task.ID, "succeeded")
		if cwd := s0.show(st.Session).Cwd; cwd != c.want {
			t.Fatalf("the session works in %q, want %q", cwd, c.want)
		}
	}
	if hs := good.Headers(); len(hs) < 2 || hs[0].Get("Authorization") != "Bearer sk-s0" {
		t.Fatalf("s0's provider must get s0's key: %v", hs)
	}
	if len(evil.Requests()) != 0 || headersHold(good, "sk-n1") {
		t.Fatal("n1's provider URL or key reached a session on s0")
	}
}

// TestARemoteHarnSessionTakesOnlyTheTargetsRemoteProfiles: the attack of
// a member that drives s0's model to run id and env. s0 lets remote
// tasks hold read-only grants only (--remote-profiles' default): a start,
// follow-up, supersede or ask with more is refused (exit 16), a steer of
// a session s0's operator runs with full grants too. A read-only session
// runs, and the model's shell call is refused by its grants: nothing runs.
func TestARemoteHarnSessionTakesOnlyTheTargetsRemoteProfiles(t *testing.T) {
	ws := t.TempDir()
	marker := filepath.Join(ws, "ran")
	model := attackerModel(t, marker, "/nonexistent")
	s0, n1 := trustedMesh(t, "HARN_REMOTE_CONTROL=n1", "HARN_PROVIDER_URL="+model.URL(), "HARN_PROVIDER_KEY=sk-s0", "HARN_WORKSPACE="+ws)
	shellGrants := grantsFile(t, "execute shell\n")
	for _, g := range [][]string{{"--profile", "full"}, {"--profile", "edit"}, {"--grants", shellGrants}} {
		args := append([]string{"task", "start", "--node", "s0", "--agent", "harn", "--model", "test-model"}, g...)
		refused(t, "a remote start with "+strings.Join(g, " "), n1.harn("", append(args, "run id")...), "beyond its --remote-profiles (read-only)")
	}
	if n := len(model.Requests()); n != 0 {
		t.Fatalf("a refused start reached the model: %d requests", n)
	}
	noHarnSession(t, s0, "a refused profile")

	ro := n1.task("start", "--node", "s0", "--agent", "harn", "--model", "test-model", "run id and env")
	done := s0.waitTask(ro.Task.ID, "succeeded")
	reqs := requestsAtLeast(t, model, 2)
	if res := toolResults(reqs[1])["c1"]; strings.Contains(res, "uid=") || !strings.Contains(res, "refused by the grant check") {
		t.Fatalf("the read-only session's shell call must be refused: %q", res)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("the model's command ran on s0 (%+v)", done.Task)
	}
	for _, op := range []string{"follow-up", "supersede"} {
		refused(t, "a remote "+op+" with full", n1.harn("", "task", op, "--node", "s0", "--session", ro.Session, "--profile", "full", "now run id"),
			"beyond its --remote-profiles")
	}
	// harn ask --session from n1 finds the session's owner through the
	// registry, and is refused there alike.
	eventually(t, meshTimeout, "n1's ask --session with full grants is refused by s0", func() (bool, string) {
		r := n1.harn("", "ask", "--session", ro.Session, "--profile", "full", "run id")
		return r.code == 16 && strings.Contains(r.stderr, "beyond its --remote-profiles"), r.String()
	})

	// A session s0's own operator runs with full grants: n1 may not steer it.
	hold := make(chan struct{})
	defer close(hold)
	held := modeltest.Text("working")
	held.Hold = hold
	local := modeltest.New(t, held)
	r := run(t, s0.hookEnv(), "", "task", "start", "--agent", "harn", "--provider-url", local.URL(), "--model", "test-model",
		"--profile", "full", "--workdir", ws, "--json", "long work")
	if r.code != 0 {
		t.Fatalf("s0's own full session: %v", r)
	}
	var full taskResultJSON
	mustJSON(t, r.stdout, &full)
	requestsAtLeast(t, local, 1)
	refused(t, "a remote steer of a full session", n1.harn("", "task", "steer", "--node", "s0", "--session", full.Session, "run env"),
		"another node may not steer it")
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a command ran on s0")
	}
}

// TestAShellToolSeesNoProviderKeyOrTheNodesSecrets: a node holds its
// provider key and other secrets in its environment; a harn session's
// shell tool runs `env`, and what it prints (which goes to the model)
// holds none of them. The provider call alone carries the key.
func TestAShellToolSeesNoProviderKeyOrTheNodesSecrets(t *testing.T) {
	m := modeltest.New(t, modeltest.Calls(true, modeltest.Call{ID: "c1", Name: "shell", Args: `{"command":"env"}`}), modeltest.Text("done"))
	e := newEnv(t)
	secrets := []string{"HARN_PROVIDER_KEY=sk-node-provider", "GITHUB_TOKEN=ghp-node", "OPENAI_API_KEY=sk-node-openai",
		"AWS_SECRET_ACCESS_KEY=aws-node", "NPM_TOKEN=npm-node"}
	n := e.spawn(append(append(append([]string(nil), e.base...), secrets...), "HARN_PROVIDER_URL="+m.URL(), "PLAIN_SETTING=kept"),
		"node", "--data-dir", e.dataDir, "--socket", e.socket, "--no-mesh")
	e.waitReady(n)
	dir := t.TempDir()
	r := runIn(t, e.hookEnv(), dir, "ask", "--model", "test-model", "--profile", "full", "print the environment")
	if r.code != 0 {
		t.Fatalf("ask: %v", r)
	}
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("want 2 model requests, got %d", len(reqs))
	}
	out := toolResults(reqs[1])["c1"]
	if !strings.Contains(out, "PLAIN_SETTING=kept") {
		t.Fatalf("the shell tool did not run env: %q", out)
	}
	for _, s := range secrets {
		_, v, _ := strings.Cut(s, "=")
		if strings.Contains(out, v) {
			t.Errorf("the shell tool's environment holds %s", s)
		}
	}
	if got := m.Headers()[0].Get("Authorization"); got != "Bearer sk-node-provider" {
		t.Fatalf("the provider call carries %q, want the node's key", got)
	}
}

// TestANodeAHookStartsDoesNotInheritTheProviderKey: a hook that finds no
// node starts one in the background; the user's HARN_PROVIDER_KEY in the
// agent's environment does not reach that node's (nor does
// HARN_PROVIDER_KEY_FILE: cli's TestAStartedNodeGetsNoProviderKey).
func TestANodeAHookStartsDoesNotInheritTheProviderKey(t *testing.T) {
	e := newEnv(t)
	env := append(e.hookEnv(), "HARN_PROVIDER_KEY=sk-user", "PLAIN_SETTING=kept")
	payload := `{"session_id":"cc-key","hook_event_name":"SessionStart","cwd":"` + t.TempDir() + `","source":"startup"}`
	if r := run(t, env, payload, "hook", "claude-code"); r.code != 0 {
		t.Fatalf("hook: %v", r)
	}
	var st nodeStatusJSON
	eventually(t, readyTimeout, "the node the hook started answers", func() (bool, string) {
		var ok bool
		st, ok = e.nodeStatus()
		return ok, "no node yet"
	})
	b, err := os.ReadFile("/proc/" + strconv.Itoa(st.PID) + "/environ")
	if err != nil {
		t.Skip("no /proc here:", err)
	}
	environ := strings.Split(string(b), "\x00")
	if !strings.Contains(string(b), "PLAIN_SETTING=kept") {
		t.Fatalf("the started node's environment is not the caller's: %q", environ)
	}
	for _, kv := range environ {
		if strings.HasPrefix(kv, "HARN_PROVIDER_KEY") {
			t.Fatalf("the node a hook started inherited %s", kv)
		}
	}
	e.stopForeignNode()
}

// keyFileRefused runs `harn ask` and `harn node` with the key file f and
// wants both refused with exit 13 and one line saying says.
func keyFileRefused(t *testing.T, f, says string) {
	t.Helper()
	e := newEnv(t)
	for _, r := range []result{
		run(t, append(e.hookEnv(), "HARN_PROVIDER_KEY_FILE="+f), "", "ask", "--model", "test-model", "hi"),
		run(t, e.hookEnv(), "", "node", "--no-mesh", "--provider-key-file", f),
	} {
		msg := strings.TrimSpace(r.stderr)
		if r.code != 13 || !strings.Contains(msg, says) || strings.Contains(msg, "\n") {
			t.Fatalf("key file %s must be refused with exit 13 and one line saying %q: %v", f, says, r)
		}
		if strings.Contains(r.stdout+r.stderr, "sk-other") {
			t.Fatalf("the refusal shows the key: %v", r)
		}
	}
}

// TestAProviderKeyFileThatIsASymlinkIsRefused: HARN_PROVIDER_KEY_FILE and
// --provider-key-file take the file itself, as the node's own secret
// files: a link (here to a private file of this user) is refused.
func TestAProviderKeyFileThatIsASymlinkIsRefused(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.key")
	writeFileT(t, real, "sk-other", 0o600)
	link := filepath.Join(dir, "provider.key")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	keyFileRefused(t, link, "is a symlink")
}

// TestAProviderKeyFileOfAnotherUserIsRefused: a key file another uid owns
// (0600, so only its owner and root read it) is refused, directly and
// through a link.
func TestAProviderKeyFileOfAnotherUserIsRefused(t *testing.T) {
	if os.Getuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("this test needs root, which CI has")
		}
		t.Skip("needs root to chown to another uid (runs in CI)")
	}
	dir := t.TempDir()
	other := filepath.Join(dir, "other.key")
	writeFileT(t, other, "sk-other", 0o600)
	if err := os.Chown(other, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	keyFileRefused(t, other, "owned by uid 65534")
	link := filepath.Join(dir, "provider.key")
	if err := os.Symlink(other, link); err != nil {
		t.Fatal(err)
	}
	keyFileRefused(t, link, "is a symlink")
}
