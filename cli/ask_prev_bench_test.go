package cli_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
)

// prevBin builds the previous landing's harn and harnd into a temp dir
// from a detached git worktree: HARN_PREV_REF, else the merge base of
// HEAD and main (HEAD~1 when HEAD is on main already). It skips when git
// or the build is not available.
func prevBin(b *testing.B) (string, string) {
	b.Helper()
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		b.Skipf("skipping: not in a git checkout: %v", err)
	}
	repo := strings.TrimSpace(string(top))
	git := func(args ...string) (string, error) {
		out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	ref := os.Getenv("HARN_PREV_REF")
	if ref == "" {
		head, _ := git("rev-parse", "HEAD")
		if ref, err = git("merge-base", "HEAD", "main"); err != nil || ref == head {
			ref = "HEAD~1"
		}
	}
	rev, err := git("rev-parse", "--short", ref)
	if err != nil {
		b.Skipf("skipping: %s: %v %s", ref, err, rev)
	}
	wt := filepath.Join(b.TempDir(), "prev")
	if out, err := git("worktree", "add", "--detach", wt, ref); err != nil {
		b.Skipf("skipping: git worktree add %s: %v %s", ref, err, out)
	}
	b.Cleanup(func() { _, _ = git("worktree", "remove", "--force", wt) })
	bin := b.TempDir()
	for _, args := range [][]string{{"-tags", "grpcnotrace", "./cmd/harn"}, {"./cmd/harnd"}} {
		cmd := exec.Command("go", append([]string{"build", "-o", bin + string(filepath.Separator)}, args...)...)
		cmd.Dir = wt
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Skipf("skipping: cannot build %s: %v\n%s", rev, err, out)
		}
	}
	return filepath.Join(bin, "harn"), rev
}

// askSide is one installation: its binary and a running node.
type askSide struct {
	bin string
	env []string
	dir string
}

func startSide(b *testing.B, bin string) askSide {
	b.Helper()
	dir := shortDir(b)
	sock := filepath.Join(dir, "s.sock")
	env := append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(dir, "xdg-config"), "XDG_STATE_HOME="+filepath.Join(dir, "xdg-state"),
		"HARN_CONFIG=", "HARN_GOSSIP_PORT=0", "HARN_RAFT_PORT=0", "HARN_RPC_PORT=0", "HARN_HTTP_PORT=0",
		"HARN_DATA_DIR="+filepath.Join(dir, "data"), "HARN_SOCKET="+sock, "HARN_PROVIDER_KEY=k")
	node := exec.Command(bin, "node", "--data-dir", filepath.Join(dir, "data"), "--socket", sock)
	node.Env = env
	if err := node.Start(); err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { node.Wait(); close(done) }()
	b.Cleanup(func() {
		node.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			node.Process.Kill()
			<-done
		}
	})
	waitSocket(b, sock, done)
	return askSide{bin: bin, env: env, dir: dir}
}

// ask runs one `harn ask` against url and returns its wall time.
func (s askSide) ask(b *testing.B, url string, extra ...string) time.Duration {
	args := append([]string{"ask", "--provider-url", url, "--model", "test-model"}, extra...)
	cmd := exec.Command(s.bin, append(args, "hi")...)
	cmd.Env, cmd.Dir = s.env, s.dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	err := cmd.Run()
	el := time.Since(t0)
	if err != nil || strings.TrimSpace(out.String()) != "ok" {
		b.Fatalf("%s ask: %v: %s", s.bin, err, out.String())
	}
	return el
}

// BenchmarkAskAgainstThePreviousLanding times `harn ask` end to end with
// this tree's binaries and with the previous landing's (built from a git
// worktree in the same run), each with its own node, against one scripted
// model server, runs interleaved: a plain answer ("plain"), and a step
// with one shell tool call (`true`) then the answer ("shell", which
// starts the tool under its process-group guard). It reports the p50 of
// each side and the ratio this/previous (docs/perf.md).
func BenchmarkAskAgainstThePreviousLanding(b *testing.B) {
	prev, rev := prevBin(b)
	this := startSide(b, harnBin(b))
	old := startSide(b, prev)
	plain := modeltest.New(b)
	plain.SetFallback(func(map[string]any) modeltest.Reply { return modeltest.Text("ok") })
	shell := modeltest.New(b)
	step := 0
	shell.SetFallback(func(map[string]any) modeltest.Reply {
		step++
		if step%2 == 1 {
			return modeltest.Calls(true, modeltest.Call{ID: "c1", Name: "shell", Args: `{"command":"true"}`})
		}
		return modeltest.Text("ok")
	})
	for _, s := range []askSide{this, old} { // warm each node
		s.ask(b, plain.URL())
		s.ask(b, shell.URL(), "--profile", "full")
	}
	b.Logf("previous landing: %s", rev)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, kind := range []string{"plain", "shell"} {
			var mine, theirs []time.Duration
			for r := 0; r < askRuns; r++ {
				if kind == "plain" {
					theirs = append(theirs, old.ask(b, plain.URL()))
					mine = append(mine, this.ask(b, plain.URL()))
				} else {
					theirs = append(theirs, old.ask(b, shell.URL(), "--profile", "full"))
					mine = append(mine, this.ask(b, shell.URL(), "--profile", "full"))
				}
			}
			slices.Sort(mine)
			slices.Sort(theirs)
			m, t := pct(mine, 50), pct(theirs, 50)
			b.ReportMetric(ms(m), kind+"_this_p50_ms")
			b.ReportMetric(ms(t), kind+"_prev_p50_ms")
			b.ReportMetric(float64(m)/float64(t), kind+"_this/prev")
		}
	}
}
