package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkHookPromptInRepo is BenchmarkHook with a UserPromptSubmit
// whose cwd is three folders inside a real git repository (with an
// origin), so that the hook also looks up the repository and branch:
// 300 hook runs interleaved with 300 of `harn version`.
func BenchmarkHookPromptInRepo(b *testing.B) {
	dir := shortDir(b)
	r := newRunner(b, dir)
	n := benchNode(b, dir)
	defer n.Close()
	repo := filepath.Join(dir, "shop")
	cwd := filepath.Join(repo, "src", "cart", "total")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		b.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"remote", "add", "origin", "git@example.com:acme/shop.git"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Skipf("git: %v %s", err, out)
		}
	}
	const sid = "9b2f0c2e-5b7d-4e21-9c3a-0d6e2f4b1a77"
	prompt := []byte(`{"session_id":"` + sid + `","transcript_path":"/home/ana/.claude/projects/x/` + sid +
		`.jsonl","cwd":"` + cwd + `","permission_mode":"default","hook_event_name":"UserPromptSubmit","prompt":"fix the rounding"}`)
	for i := 0; i < 10; i++ {
		r.run(b, prompt, true, "hook", "claude-code")
		r.run(b, nil, false, "version")
	}
	const runs = 300
	var hook, version []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := 0; j < runs; j++ {
			d, _ := r.run(b, prompt, true, "hook", "claude-code")
			hook = append(hook, d)
			d, _ = r.run(b, nil, false, "version")
			version = append(version, d)
		}
	}
	b.StopTimer()
	slices.Sort(hook)
	slices.Sort(version)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(pct(hook, 50)), "hook-p50-ms")
	b.ReportMetric(ms(pct(hook, 99)), "hook-p99-ms")
	b.ReportMetric(ms(pct(version, 50)), "version-p50-ms")
	b.ReportMetric(float64(pct(hook, 50))/float64(pct(version, 50)), "p50-hook/version")
}
