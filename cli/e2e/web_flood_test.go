package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// helperSlowFlood is the helper's mode that floods the board with slow
// headers (runSlowFlood).
const helperSlowFlood = "slow-flood"

// runSlowFlood, run as another local user, holds HARN_E2E_CONNS
// connections to the board at HARN_E2E_ADDR, each sending its headers a
// byte every 200 ms and never ending them, and opens a new one whenever
// one is closed, for HARN_E2E_FOR. It prints "up" once the first wave is
// open, then one line of counts.
func runSlowFlood() int {
	addr := os.Getenv("HARN_E2E_ADDR")
	n, _ := strconv.Atoi(os.Getenv("HARN_E2E_CONNS"))
	d, _ := time.ParseDuration(os.Getenv("HARN_E2E_FOR"))
	end := time.Now().Add(d)
	var dialed, closed atomic.Int64
	var wg sync.WaitGroup
	var up sync.WaitGroup
	up.Add(n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			first := true
			for k := 0; k < 100_000 && time.Now().Before(end); k++ {
				c, err := net.DialTimeout("tcp", addr, time.Second)
				dialed.Add(1)
				if first {
					first = false
					up.Done()
				}
				if err != nil {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				_ = c.SetDeadline(end)
				_, err = fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow-%d: ", i)
				for err == nil && time.Now().Before(end) {
					time.Sleep(200 * time.Millisecond)
					_, err = c.Write([]byte("a"))
				}
				if err != nil {
					closed.Add(1)
				}
				c.Close()
			}
		}()
	}
	up.Wait()
	fmt.Println("up")
	wg.Wait()
	fmt.Printf("dialed %d closed-by-the-board %d\n", dialed.Load(), closed.Load())
	return 0
}

// TestASlowHeaderFloodFromAnotherUserLeavesTheBoardToItsOwner: another
// local user holds 600 connections to the board that send their headers
// a byte at a time and reconnect when cut (the board used to take 256
// connections and then let the next wait: its owner's requests timed
// out). The board admits at most 16 pending connections of that user
// (its uid, read from the socket's owner) and cuts a pending connection
// after 3 s without its headers, so every request the owner makes with
// the token during the flood answers 200 within 3 s.
func TestASlowHeaderFloodFromAnotherUserLeavesTheBoardToItsOwner(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("skipped: needs root to run a second local user (CI runs it as root, under CI=true)")
	}
	uid, gid := otherUID(t)
	e := boardNode(t)
	b := e.board()
	dir, err := os.MkdirTemp("", "harn-flood-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	self, _ := os.Executable()
	helper := filepath.Join(dir, "e2e.test")
	if err := copyExecutable(self, helper); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(b.base)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	flood := exec.CommandContext(ctx, helper)
	flood.Env = append(cleanEnv(dir), helperEnv+"="+helperSlowFlood, "HARN_E2E_ADDR="+u.Host, "HARN_E2E_CONNS=600", "HARN_E2E_FOR=12s")
	flood.Dir = dir
	flood.SysProcAttr = otherCredential(uid, gid)
	out, _ := flood.StdoutPipe()
	if err := flood.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "up" {
		t.Fatalf("the flood did not start: %q", lines.Text())
	}
	owner := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for i := range 16 {
		time.Sleep(400 * time.Millisecond) // spread over the flood, which reconnects all along
		req, _ := http.NewRequest("GET", b.base, nil)
		req.Header.Set("Authorization", "Bearer "+b.token)
		start := time.Now()
		res, err := owner.Do(req)
		if err != nil {
			t.Fatalf("the owner's request %d during the flood: %v (after %s)", i, err, time.Since(start))
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("the owner's request %d during the flood: %d", i, res.StatusCode)
		}
	}
	if !lines.Scan() {
		t.Fatal("the flood ended without its counts")
	}
	_ = flood.Wait()
	var dialed, closed int
	fmt.Sscanf(lines.Text(), "dialed %d closed-by-the-board %d", &dialed, &closed)
	t.Logf("flood from uid %d: %s", uid, lines.Text())
	if closed < 600-16 {
		t.Fatalf("the board cut %d of the flood's connections; want all but its 16 (%s)", closed, lines.Text())
	}
}
