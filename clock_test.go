package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// clockExempt are the paths whose time is the wall clock by purpose:
// the clock itself, the benchmarks' stopwatch, the in-memory network of
// the mesh's tests and the test support. Test files, exported test
// helpers (testing.go, in the style of raft's MakeCluster) and test
// programs (testdata) are not read.
var clockExempt = []string{"util/clock/", "util/benchrun/", "internal/testsupport/", "mesh/memnet.go"}

// clockNotYet are files still to move onto util/clock.
var clockNotYet = []string{"cli/hook/hook.go"}

// clockFiles is every non-test Go file of the module that must read time
// through util/clock.
func clockFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || filepath.Base(path) == "testing.go" {
			return nil
		}
		for _, p := range append(clockExempt, clockNotYet...) {
			if path == p || (strings.HasSuffix(p, "/") && strings.HasPrefix(path, p)) {
				return nil
			}
		}
		out = append(out, path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// directTime is a call that reads or waits on the wall clock directly.
var directTime = regexp.MustCompile(`\btime\.(Now|Since|Until|Sleep|After|AfterFunc|NewTimer|NewTicker|Tick)\(`)

// TestOneClock: no non-test file outside clockExempt calls time.Now,
// time.Sleep, time.After or a timer of package time directly, except on a
// line that says why with a `//clock:real REASON` comment (a library's
// own wall time, such as raft's LastContact or memberlist's real sends, or
// a pipe that drains in real time).
func TestOneClock(t *testing.T) {
	for _, p := range clockNotYet {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("clockNotYet names %s: %v (keep the list current)", p, err)
		}
	}
	files := clockFiles(t)
	if len(files) < 100 {
		t.Fatalf("only %d files checked: the walk is broken", len(files))
	}
	for _, f := range files {
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
