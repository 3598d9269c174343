package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// oneClockFiles are the files whose time is read through util/clock (the
// Clock of their Config, the real one by default): the raft store, the
// mesh, the board's clock and its event streams, and the ledger (every
// non-test file of it).
var oneClockFiles = []string{"raftstore/store.go", "mesh/mesh.go", "node/web.go", "node/board/sse.go", "node/ledger/*.go"}

// directTime is a call that reads or waits on the wall clock directly.
var directTime = regexp.MustCompile(`\btime\.(Now|Since|Until|Sleep|After|AfterFunc|NewTimer|NewTicker|Tick)\(`)

// TestOneClock: the files above call no time.Now, time.Sleep, time.After
// or timer of package time directly, except on a line that says why with
// a `//clock:real REASON` comment (a library's own wall time, such as
// raft's LastContact or memberlist's real sends).
func TestOneClock(t *testing.T) {
	for _, pat := range oneClockFiles {
		files, err := filepath.Glob(pat)
		if err != nil || len(files) == 0 {
			t.Fatalf("%s matches no file (%v): keep the list current", pat, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for i, line := range strings.Split(string(b), "\n") {
				if !directTime.MatchString(line) {
					continue
				}
				if _, why, ok := strings.Cut(line, "//clock:real "); ok && strings.TrimSpace(why) != "" {
					continue
				}
				t.Errorf("%s:%d calls package time's clock directly; use the Config's clock.Clock (or say why with //clock:real REASON): %s",
					f, i+1, strings.TrimSpace(line))
			}
		}
	}
}
