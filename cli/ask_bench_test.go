package cli_test

import (
	"bytes"
	"net"
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

// askRuns is how many runs of each side one iteration times.
const askRuns = 24

// BenchmarkAskVsCurl times `harn ask` end to end (the real binaries: the
// client, a running node, its loop, the model call, the answer printed)
// against curl posting the very request body the loop sent to the same
// scripted chat-completions server, runs interleaved. It reports the p50
// of each and their ratio. Target: ask ≤ 1.5 × curl. Without curl it
// skips, except under CI=true, where it fails.
func BenchmarkAskVsCurl(b *testing.B) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			b.Fatalf("curl is required under CI: %v", err)
		}
		b.Skip("skipping: no curl on PATH to compare with")
	}
	bin := harnBin(b)
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
	srv := modeltest.New(b)
	srv.SetFallback(func(map[string]any) modeltest.Reply { return modeltest.Text("ok") })
	ask := func() time.Duration {
		cmd := exec.Command(bin, "ask", "--provider-url", srv.URL(), "--model", "test-model", "hi")
		cmd.Env, cmd.Dir = env, dir
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		t0 := time.Now()
		err := cmd.Run()
		el := time.Since(t0)
		if err != nil || strings.TrimSpace(out.String()) != "ok" {
			b.Fatalf("harn ask: %v: %s", err, out.String())
		}
		return el
	}
	ask() // the first session warms the node (the vocabulary, the connection)
	body := filepath.Join(dir, "body.json")
	if err := os.WriteFile(body, []byte(srv.Raw()[0]), 0o600); err != nil {
		b.Fatal(err)
	}
	viaCurl := func() time.Duration {
		cmd := exec.Command(curl, "-sS", "-N", "-H", "Content-Type: application/json", "-H", "Authorization: Bearer k",
			"--data-binary", "@"+body, srv.URL()+"/chat/completions")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		t0 := time.Now()
		err := cmd.Run()
		el := time.Since(t0)
		if err != nil || !strings.Contains(out.String(), "[DONE]") {
			b.Fatalf("curl: %v: %s", err, out.String())
		}
		return el
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var asks, curls []time.Duration
		for r := 0; r < askRuns; r++ {
			asks = append(asks, ask())
			curls = append(curls, viaCurl())
		}
		slices.Sort(asks)
		slices.Sort(curls)
		a, c := pct(asks, 50), pct(curls, 50)
		b.ReportMetric(ms(a), "ask_p50_ms")
		b.ReportMetric(ms(c), "curl_p50_ms")
		b.ReportMetric(float64(a)/float64(c), "ask/curl")
	}
}

// waitSocket waits (bounded) for the node's socket to accept.
func waitSocket(b *testing.B, sock string, done <-chan struct{}) {
	b.Helper()
	for i := 0; i < 6000; i++ { // 30 s at 5 ms
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return
		}
		select {
		case <-done:
			b.Fatal("harn node exited before answering")
		case <-time.After(5 * time.Millisecond):
		}
	}
	b.Fatal("harn node did not answer within 30 s")
}
