package cli_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// startRuns is how many first starts one iteration times, per variant.
const startRuns = 10

// BenchmarkLoneNodeFirstStart times a lone `harn node` process's first
// start on a fresh data dir, from exec until its socket accepts a
// connection: with the default mutual TLS (it makes its own CA, gossip
// keyring and certificate) beside --insecure-mesh (none of that), runs
// interleaved. It reports p50 and max of each and the ratio of the p50s.
// Target: the default's first start under 1 s.
func BenchmarkLoneNodeFirstStart(b *testing.B) {
	bin := harnBin(b)
	for i := 0; i < b.N; i++ {
		var tlsRuns, plainRuns []time.Duration
		for r := 0; r < startRuns; r++ {
			tlsRuns = append(tlsRuns, firstStart(b, bin))
			plainRuns = append(plainRuns, firstStart(b, bin, "--insecure-mesh"))
		}
		slices.Sort(tlsRuns)
		slices.Sort(plainRuns)
		b.ReportMetric(ms(pct(tlsRuns, 50)), "tls_p50_ms")
		b.ReportMetric(ms(tlsRuns[len(tlsRuns)-1]), "tls_max_ms")
		b.ReportMetric(ms(pct(plainRuns, 50)), "plain_p50_ms")
		b.ReportMetric(ms(plainRuns[len(plainRuns)-1]), "plain_max_ms")
		b.ReportMetric(float64(pct(tlsRuns, 50))/float64(pct(plainRuns, 50)), "tls/plain")
	}
}

// firstStart starts a node on a fresh data dir and returns how long its
// socket took to accept; it stops the node before returning.
func firstStart(b *testing.B, bin string, extra ...string) time.Duration {
	b.Helper()
	dir := shortDir(b)
	sock := filepath.Join(dir, "s.sock")
	cmd := exec.Command(bin, append([]string{"node", "--data-dir", filepath.Join(dir, "data"), "--socket", sock}, extra...)...)
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(dir, "xdg-config"), "HARN_CONFIG=",
		"HARN_GOSSIP_PORT=0", "HARN_RAFT_PORT=0", "HARN_RPC_PORT=0", "HARN_HTTP_PORT=0")
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}()
	for i := 0; i < 6000; i++ { // 30 s at 5 ms
		if c, err := net.Dial("unix", sock); err == nil {
			el := time.Since(start)
			c.Close()
			return el
		}
		select {
		case <-done:
			b.Fatalf("harn node %v exited before answering: %v", extra, cmd.ProcessState)
		case <-time.After(5 * time.Millisecond):
		}
	}
	b.Fatalf("harn node %v did not answer within 30 s", extra)
	return 0
}
