package node

import (
	"bytes"
	"io"
	"net"
	"os/exec"
	"sort"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/tasks"
)

// echoArgv is the far end of both sides: a terminal in raw mode whose
// program writes back each byte it reads.
var echoArgv = []string{"/bin/sh", "-c", "stty raw -echo; echo ready; exec cat"}

// BenchmarkHostedKeystroke is the keystroke round trip through an attach
// on a two-node mesh (mutual TLS): a byte typed at tw1's local socket
// goes to tw0, which hosts the terminal, through tw1's relay and tw0's
// HostedPeer.Attach; the echo comes back the same way. Beside it, in the
// same run, the same byte through a bare loopback TCP relay of two hops
// to the same kind of terminal. It reports each side's p50 and p99 and
// the ratio of the p50s.
func BenchmarkHostedKeystroke(b *testing.B) {
	if testing.Short() {
		b.Skip("starts a real two-node mesh; skipped under -short")
	}
	m, tok := startTrustMeshWith(b, func(c *Config) {
		c.Cluster.RemoteControl = "tw0,tw1"
		c.Launchers = tasks.Launchers{"echo": echoArgv}
	})
	owner := m.nodes[0]
	viewer := m.join("tw1", tok, false)
	run, err := owner.hosts.Start(&api.HostedRunRequest{Agent: "echo", Dir: b.TempDir(), By: "bench"}, false)
	if err != nil {
		b.Fatal(err)
	}
	mesh.WaitFor(b, 30*time.Second, "tw1 knows the hosted session", func() bool {
		_, where, err := viewer.hosts.Place(run.Session)
		return err == nil && where == "tw0"
	})
	conn, err := net.Dial("unix", viewer.cfg.Socket)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	if err := api.OpenAttach(conn, &api.AttachOpen{Session: run.Session, Rows: 24, Cols: 80}); err != nil {
		b.Fatal(err)
	}
	first, err := api.ReadAttachFrame(conn)
	if err != nil || first.End != nil {
		b.Fatalf("attach: %v %v", err, first.GetEnd())
	}
	mesh.WaitFor(b, 10*time.Second, "the echo terminal is ready", func() bool {
		l, _ := owner.hosts.Room().Screen(run.Session)
		return len(l) > 0 && bytes.Contains([]byte(l[0]), []byte("ready"))
	})
	harnKey := func(k byte) time.Duration {
		t0 := time.Now()
		if err := api.WriteFrame(conn, &api.AttachFrame{Data: []byte{k}}); err != nil {
			b.Fatal(err)
		}
		for {
			f, err := api.ReadAttachFrame(conn)
			if err != nil || f.End != nil {
				b.Fatalf("attach ended: %v %v", err, f.GetEnd())
			}
			if bytes.IndexByte(f.Data, k) >= 0 {
				return time.Since(t0)
			}
		}
	}
	bare := bareRelay(b)
	defer bare.Close()
	bareKey := func(k byte) time.Duration {
		t0 := time.Now()
		if _, err := bare.Write([]byte{k}); err != nil {
			b.Fatal(err)
		}
		var one [1]byte
		for {
			if _, err := io.ReadFull(bare, one[:]); err != nil {
				b.Fatal(err)
			}
			if one[0] == k {
				return time.Since(t0)
			}
		}
	}
	// Warm both paths.
	for i := 0; i < 20; i++ {
		harnKey('a' + byte(i%26))
		bareKey('a' + byte(i%26))
	}
	var hs, bs []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := 'a' + byte(i%26)
		hs = append(hs, harnKey(k))
		bs = append(bs, bareKey(k))
	}
	b.StopTimer()
	p := func(s []time.Duration, q float64) time.Duration {
		c := append([]time.Duration(nil), s...)
		sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
		return c[min(len(c)-1, int(q*float64(len(c))))]
	}
	b.ReportMetric(float64(p(hs, 0.5).Microseconds()), "harn_p50_µs")
	b.ReportMetric(float64(p(hs, 0.99).Microseconds()), "harn_p99_µs")
	b.ReportMetric(float64(p(bs, 0.5).Microseconds()), "bare_p50_µs")
	b.ReportMetric(float64(p(bs, 0.99).Microseconds()), "bare_p99_µs")
	b.ReportMetric(ratioOf(p(hs, 0.5), p(bs, 0.5)), "ratio_p50")
}

// bareRelay is a client connection through two loopback TCP relays to a
// terminal running echoArgv.
func bareRelay(b *testing.B) net.Conn {
	b.Helper()
	cmd := exec.Command(echoArgv[0], echoArgv[1:]...)
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 80})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		f.Close()
	})
	var ready [64]byte
	if _, err := f.Read(ready[:]); err != nil { // "ready"
		b.Fatal(err)
	}
	far := listen(b, func(c net.Conn) {
		go io.Copy(f, c)
		io.Copy(c, f)
	})
	near := listen(b, func(c net.Conn) {
		d, err := net.Dial("tcp", far)
		if err != nil {
			c.Close()
			return
		}
		go io.Copy(d, c)
		io.Copy(c, d)
	})
	c, err := net.Dial("tcp", near)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// listen serves one connection on a loopback port with serve.
func listen(b *testing.B, serve func(net.Conn)) string {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		serve(c)
	}()
	return l.Addr().String()
}
