package tools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/util/clock"
)

func newBox(t *testing.T, cfg Config) (*Toolbox, string) {
	t.Helper()
	rt, err := runtime.New(runtime.Config{Ledger: runtime.NewMemLedger(), Key: []byte("test-key-0123456789")})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Runtime = rt
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, t.TempDir()
}

func run(t *testing.T, b *Toolbox, dir, name string, args any) (Result, error) {
	t.Helper()
	raw, _ := json.Marshal(args)
	return b.Run(context.Background(), Call{ID: "c", Name: name, Args: raw, Dir: dir})
}

func TestCoreSpecsHashTheirSchemas(t *testing.T) {
	want := []string{"read", "write", "edit", "shell", "grep", "glob"}
	for i, s := range CoreSpecs() {
		if s.Name != want[i] || s.Hash != Hash(s.Schema) || s.Provider != ProviderCore {
			t.Fatalf("spec %d: %+v", i, s)
		}
		if s.Mutating != (s.Name == "write" || s.Name == "edit" || s.Name == "shell") {
			t.Fatalf("%s mutating=%v", s.Name, s.Mutating)
		}
		var v map[string]any
		if err := json.Unmarshal(s.Schema, &v); err != nil || v["type"] != "object" {
			t.Fatalf("%s schema: %v %v", s.Name, err, v)
		}
	}
	want = []string{"capabilities_list", "capabilities_search", "capabilities_inspect", "tools_load", "skills_activate"}
	for i, s := range DiscoverySpecs() {
		if s.Name != want[i] || s.Hash != Hash(s.Schema) || s.Provider != ProviderHarn || s.Mutating {
			t.Fatalf("discovery spec %d: %+v", i, s)
		}
	}
}

func TestReadNumbersLinesAndPages(t *testing.T) {
	b, dir := newBox(t, Config{})
	writeFileT(t, filepath.Join(dir, "a.txt"), "one\ntwo\nthree\n")
	res, err := run(t, b, dir, "read", map[string]any{"path": "a.txt"})
	if err != nil || !strings.Contains(res.Content, "     1\tone\n") || !strings.Contains(res.Content, "     3\tthree") {
		t.Fatalf("%v %q", err, res.Content)
	}
	res, err = run(t, b, dir, "read", map[string]any{"path": filepath.Join(dir, "a.txt"), "offset": 2, "limit": 1})
	if err != nil || !strings.HasPrefix(res.Content, "     2\ttwo\n") || !strings.Contains(res.Content, "offset 3") {
		t.Fatalf("%v %q", err, res.Content)
	}
}

func TestWriteCreatesFoldersAndReplaces(t *testing.T) {
	b, dir := newBox(t, Config{})
	if _, err := run(t, b, dir, "write", map[string]any{"path": "x/y/z.txt", "content": "hi"}); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, b, dir, "write", map[string]any{"path": "x/y/z.txt", "content": "ho"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "x/y/z.txt")); string(got) != "ho" {
		t.Fatalf("%q", got)
	}
}

func TestEditReplacesAnExactUniqueMatch(t *testing.T) {
	b, dir := newBox(t, Config{})
	p := filepath.Join(dir, "f.go")
	writeFileT(t, p, "a := 1\nb := 2\n")
	if _, err := run(t, b, dir, "edit", map[string]any{"path": "f.go", "old_string": "b := 2", "new_string": "b := 3"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); string(got) != "a := 1\nb := 3\n" {
		t.Fatalf("%q", got)
	}
}

func TestEditRefusesAnAmbiguousMatch(t *testing.T) {
	b, dir := newBox(t, Config{})
	p := filepath.Join(dir, "f.txt")
	writeFileT(t, p, "x\nx\n")
	res, err := run(t, b, dir, "edit", map[string]any{"path": "f.txt", "old_string": "x", "new_string": "y"})
	if !errors.Is(err, ErrAmbiguous) || !res.IsError || !strings.Contains(res.Content, "2 times") {
		t.Fatalf("%v %+v", err, res)
	}
	if got, _ := os.ReadFile(p); string(got) != "x\nx\n" {
		t.Fatalf("file changed: %q", got)
	}
	if _, err := run(t, b, dir, "edit", map[string]any{"path": "f.txt", "old_string": "x", "new_string": "y", "replace_all": true}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); string(got) != "y\ny\n" {
		t.Fatalf("%q", got)
	}
}

func TestEditRefusesAMissingMatch(t *testing.T) {
	b, dir := newBox(t, Config{})
	writeFileT(t, filepath.Join(dir, "f.txt"), "abc")
	if _, err := run(t, b, dir, "edit", map[string]any{"path": "f.txt", "old_string": "zzz", "new_string": "y"}); !errors.Is(err, ErrNoMatch) {
		t.Fatal(err)
	}
}

func TestPathsStayInTheWorkdir(t *testing.T) {
	b, dir := newBox(t, Config{})
	outside := t.TempDir()
	writeFileT(t, filepath.Join(outside, "secret"), "s")
	for _, p := range []string{"../secret", filepath.Join(outside, "secret"), "a/../../secret"} {
		if res, err := run(t, b, dir, "read", map[string]any{"path": p}); !errors.Is(err, ErrOutsideWorkdir) || !res.IsError {
			t.Fatalf("read %s: %v", p, err)
		}
		if _, err := run(t, b, dir, "write", map[string]any{"path": p, "content": "x"}); !errors.Is(err, ErrOutsideWorkdir) {
			t.Fatalf("write %s: %v", p, err)
		}
	}
	// A link that leads out is refused by os.Root.
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	if res, err := run(t, b, dir, "read", map[string]any{"path": "out/secret"}); err == nil || strings.Contains(res.Content, "\ts") {
		t.Fatalf("read through a link: %v %q", err, res.Content)
	}
	if _, err := run(t, b, dir, "write", map[string]any{"path": "out/new", "content": "x"}); err == nil {
		t.Fatal("write through a link out was allowed")
	}
	if _, err := os.Stat(filepath.Join(outside, "new")); err == nil {
		t.Fatal("a file appeared outside the workdir")
	}
}

func TestGrepAndGlob(t *testing.T) {
	b, dir := newBox(t, Config{})
	writeFileT(t, filepath.Join(dir, "a/b/c.go"), "package c\nfunc Hello() {}\n")
	writeFileT(t, filepath.Join(dir, "a/d.txt"), "hello there\n")
	writeFileT(t, filepath.Join(dir, ".git/x.go"), "func Hello()\n")
	res, err := run(t, b, dir, "grep", map[string]any{"pattern": "hello", "ignore_case": true})
	if err != nil || !strings.Contains(res.Content, "a/b/c.go:2:func Hello() {}") || !strings.Contains(res.Content, "a/d.txt:1:") || strings.Contains(res.Content, ".git") {
		t.Fatalf("%v %q", err, res.Content)
	}
	res, err = run(t, b, dir, "grep", map[string]any{"pattern": "Hello", "glob": "*.txt"})
	if err != nil || res.Content != "no matches" {
		t.Fatalf("%v %q", err, res.Content)
	}
	res, err = run(t, b, dir, "glob", map[string]any{"pattern": "**/*.go"})
	if err != nil || res.Content != "a/b/c.go\n" {
		t.Fatalf("%v %q", err, res.Content)
	}
	res, err = run(t, b, dir, "glob", map[string]any{"pattern": "*.txt", "path": "a"})
	if err != nil || res.Content != "a/d.txt\n" {
		t.Fatalf("%v %q", err, res.Content)
	}
	if _, err := run(t, b, dir, "grep", map[string]any{"pattern": "x", "path": ".."}); !errors.Is(err, ErrOutsideWorkdir) {
		t.Fatal(err)
	}
}

func TestShellRunsInTheWorkdir(t *testing.T) {
	b, dir := newBox(t, Config{})
	res, err := run(t, b, dir, "shell", map[string]any{"command": "pwd; echo err >&2; exit 3"})
	real, _ := filepath.EvalSymlinks(dir)
	if err != nil || !strings.Contains(res.Content, real) || !strings.Contains(res.Content, "err") || !strings.Contains(res.Content, "[exit status 3]") {
		t.Fatalf("%v %q", err, res.Content)
	}
}

func TestShellOutputIsBounded(t *testing.T) {
	b, dir := newBox(t, Config{MaxOutput: 1000})
	res, err := run(t, b, dir, "shell", map[string]any{"command": "head -c 200000 /dev/zero | tr '\\0' x"})
	if err != nil || len(res.Content) > 1000 || !strings.Contains(res.Content, "of 200000 bytes shown") {
		t.Fatalf("%v %d %q", err, len(res.Content), res.Content[max(0, len(res.Content)-80):])
	}
}

// waitFile polls for a file the command under test writes once it is set
// up (bounded).
func waitFile(t *testing.T, p string) {
	t.Helper()
	for i := 0; i < 1000; i++ {
		if _, err := os.Stat(p); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", p)
}

// groupGone waits (bounded) until no process is left in the group.
func groupGone(t *testing.T, pgid int) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process group %d still alive", pgid)
}

func TestShellTimeoutInterruptsTheGroup(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	b, dir := newBox(t, Config{Clock: clk})
	done := make(chan struct{})
	var res Result
	var err error
	go func() {
		defer close(done)
		res, err = run(t, b, dir, "shell", map[string]any{"command": "echo $$ > p.tmp; mv p.tmp pgid; sleep 30 & sleep 30; wait", "timeout_ms": 5000})
	}()
	waitFile(t, filepath.Join(dir, "pgid"))
	if !clk.BlockUntil(1, 10*time.Second) {
		t.Fatal("no timeout timer")
	}
	select {
	case <-done:
		t.Fatal("returned before its timeout")
	default:
	}
	clk.Advance(5 * time.Second)
	<-done
	if !errors.Is(err, ErrTimeout) || !res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "pgid"))
	pgid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	if pgid <= 1 {
		t.Fatalf("pgid file %q", raw)
	}
	groupGone(t, pgid)
}

func TestShellCancelSendsSIGINTThenSIGKILLAfterGrace(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	b, dir := newBox(t, Config{Clock: clk, ShellGrace: 3 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		raw, _ := json.Marshal(map[string]any{"command": "trap '' INT; echo $$ > p.tmp; mv p.tmp pgid; sleep 30"})
		_, err = b.Run(ctx, Call{Name: "shell", Args: raw, Dir: dir})
	}()
	waitFile(t, filepath.Join(dir, "pgid"))
	cancel()
	if !clk.BlockUntil(2, 10*time.Second) { // the timeout and the grace period
		t.Fatal("no grace timer after the cancel")
	}
	select {
	case <-done:
		t.Fatal("a shell ignoring SIGINT ended before the grace period")
	default:
	}
	clk.Advance(3 * time.Second)
	<-done
	if !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "pgid"))
	pgid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	if pgid <= 1 {
		t.Fatalf("pgid file %q", raw)
	}
	groupGone(t, pgid)
}

// strayPID reads the pid a test's escaped process wrote, and kills it at
// the test's end.
func strayPID(t *testing.T, p string) int {
	t.Helper()
	waitFile(t, p)
	raw, _ := os.ReadFile(p)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	if pid <= 1 {
		t.Fatalf("pid file %q", raw)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

// A stopped shell whose output a process outside its group still holds
// (it left with setsid and runs on) ends with ErrOutlived: the loop cannot
// say that what the call started is over.
func TestShellStoppedWhileAProcessLeftItsGroupIsOutlived(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	b, dir := newBox(t, Config{Clock: clk, ShellGrace: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		raw, _ := json.Marshal(map[string]any{"command": "setsid sh -c 'echo $$ > s.tmp; mv s.tmp stray; exec sleep 30' & wait"})
		_, err := b.Run(ctx, Call{Name: "shell", Args: raw, Dir: dir})
		done <- err
	}()
	strayPID(t, filepath.Join(dir, "stray"))
	cancel()
	if !clk.BlockUntil(2, 10*time.Second) { // the timeout and the grace period
		t.Fatal("no grace timer after the cancel")
	}
	clk.Advance(50 * time.Millisecond) // the SIGKILL; the pipe's drain is bounded in real time
	select {
	case err := <-done:
		if !errors.Is(err, ErrOutlived) || !errors.Is(err, context.Canceled) {
			t.Fatalf("a stopped shell whose escaped process runs on: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stopped shell did not return")
	}
}

// A command that finished leaves its background jobs to itself: a job
// holding the output is no reason to call the outcome unknown.
func TestShellThatFinishedWithABackgroundJobIsNotOutlived(t *testing.T) {
	b, dir := newBox(t, Config{ShellGrace: 50 * time.Millisecond})
	res, err := run(t, b, dir, "shell", map[string]any{"command": "setsid sh -c 'echo $$ > s.tmp; mv s.tmp stray; exec sleep 30' & i=0; while [ ! -e stray ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done; echo started"})
	strayPID(t, filepath.Join(dir, "stray"))
	if err != nil || !strings.Contains(res.Content, "started") {
		t.Fatalf("%v %q", err, res.Content)
	}
}

func TestSplitWordsAsAShell(t *testing.T) {
	for in, want := range map[string][]string{
		`a b  c`:              {"a", "b", "c"},
		`go run './x y' "z"`:  {"go", "run", "./x y", "z"},
		`a\ b "c\"d" 'e\f'`:   {"a b", `c"d`, `e\f`},
		`srv --flag="$HOME;"`: {"srv", "--flag=$HOME;"},
		``:                    nil,
	} {
		got, err := SplitWords(in)
		if err != nil || strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
			t.Fatalf("%q: %q %v", in, got, err)
		}
	}
	if _, err := SplitWords(`a 'b`); err == nil {
		t.Fatal("unclosed quote accepted")
	}
}
