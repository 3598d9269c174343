package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The README walk's machinery: README's marked blocks, and shells the
// test types them into.

// walkStep is one marked block of the walk's pages:
// `<!-- walk: NAME shell=S -->` before a ```sh block, or
// `<!-- walk: NAME shell=S terminal -->` for a foreground command that
// keeps its terminal (`make run`).
type walkStep struct {
	name, shell string
	terminal    bool
	file        string
	lines       []string
}

var walkMarker = regexp.MustCompile(`^<!-- walk: (\S+) shell=(\S+)( terminal)? -->$`)

// readmeWalk reads the walk's steps from the pages, in the order a
// reader meets them: each file's steps in order, the files in turn. A
// line ending in a backslash goes on on the next line.
func readmeWalk(t *testing.T, files ...string) []walkStep {
	t.Helper()
	var steps []walkStep
	for _, f := range files {
		steps = append(steps, walkStepsOf(t, f)...)
	}
	return steps
}

func walkStepsOf(t *testing.T, file string) []walkStep {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var steps []walkStep
	for i := 0; i < len(lines); i++ {
		m := walkMarker.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if m == nil {
			continue
		}
		if i+1 >= len(lines) || strings.TrimSpace(lines[i+1]) != "```sh" {
			t.Fatalf("%s:%d: the walk marker %q is not right before a ```sh block", file, i+1, m[1])
		}
		st := walkStep{name: m[1], shell: m[2], terminal: m[3] != "", file: filepath.Base(file)}
		cont := ""
		for i += 2; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			l := cont + lines[i]
			if strings.HasSuffix(l, `\`) {
				cont = strings.TrimSuffix(l, `\`)
				continue
			}
			cont = ""
			if s := strings.TrimSpace(l); s != "" && !strings.HasPrefix(s, "#") {
				st.lines = append(st.lines, s)
			}
		}
		steps = append(steps, st)
	}
	return steps
}

// command is a README line without its trailing comment: what a person
// types. The walk's lines quote no #.
func command(line string) string {
	if i := strings.Index(line, " #"); i >= 0 {
		line = line[:i]
	}
	return strings.TrimSpace(line)
}

// splitRedirect cuts a command into its words up to the first
// redirection or `&`, and the rest (`>>~/harn/a.log 2>&1 &`).
func splitRedirect(cmd string) (words []string, rest string) {
	f := strings.Fields(cmd)
	for i, w := range f {
		if strings.HasPrefix(w, ">") || w == "&" || strings.HasPrefix(w, "2>") {
			return f[:i], strings.Join(f[i:], " ")
		}
	}
	return f, ""
}

// sameHint says whether README's words are the printed hint's, a word
// with `…` standing for any word with the same start (the token).
func sameHint(readme, printed []string) bool {
	if len(readme) != len(printed) {
		return false
	}
	for i, w := range readme {
		if pre, _, ok := strings.Cut(w, "…"); ok {
			if !strings.HasPrefix(printed[i], pre) {
				return false
			}
			continue
		}
		if w != printed[i] {
			return false
		}
	}
	return true
}

// hintIn is the command printed after marker in out (up to the line's
// end, or to the closing backtick when marker ends with one).
func hintIn(out, marker string) []string {
	_, rest, ok := strings.Cut(out, marker)
	if !ok {
		return nil
	}
	rest, _, _ = strings.Cut(rest, "\n")
	if strings.HasSuffix(marker, "`") {
		rest, _, _ = strings.Cut(rest, "`")
	}
	return strings.Fields(rest)
}

// freeBlock is a port p with p..p+n-1 free on 127.0.0.1 (TCP, and UDP
// for p, the gossip port), so that the README's port layout (gossip,
// raft, rpc = gossip+2, http) keeps its shape.
func freeBlock(t *testing.T, n int, taken map[int]bool) int {
	t.Helper()
	for i := 0; i < 200; i++ {
		p := freePorts(t, 1)[0]
		if p+n > 65535 {
			continue
		}
		ok := true
		for q := p; q < p+n && ok; q++ {
			if taken[q] {
				ok = false
				break
			}
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(q)))
			if err != nil {
				ok = false
				break
			}
			l.Close()
		}
		if u, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p))); err == nil {
			u.Close()
		} else {
			ok = false
		}
		if ok {
			for q := p; q < p+n; q++ {
				taken[q] = true
			}
			return p
		}
	}
	t.Fatalf("no block of %d free ports", n)
	return 0
}

// walkShell is a bash the test types lines into, as a person would into
// a terminal. Each line's output goes to a file of its own; bash's stdout
// carries only the test's end markers.
type walkShell struct {
	t     *testing.T
	name  string
	dir   string // outputs
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string // bash's stdout, line by line; closed at its end
	done  chan struct{}
	n     int
}

func startShell(t *testing.T, name, dir, cwd string, environ []string) *walkShell {
	t.Helper()
	s := &walkShell{t: t, name: name, dir: dir, lines: make(chan string, 16), done: make(chan struct{})}
	s.cmd = exec.Command("bash", "--noprofile", "--norc")
	s.cmd.Dir, s.cmd.Env = cwd, environ
	// Its own process group: a shell that does not exit in time is
	// killed with what it runs.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var err error
	if s.in, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errf, err := os.Create(filepath.Join(dir, "shell-"+name+".stderr"))
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stderr = errf
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	errf.Close()
	// The reader is the shell's: it ends when bash's stdout closes, and
	// close waits for it.
	go func() {
		defer close(s.done)
		defer close(s.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
	}()
	t.Cleanup(s.close)
	return s
}

// run types line into the shell and waits, at most d, for it to finish:
// its exit code and its output (stdout and stderr).
func (s *walkShell) run(line string, d time.Duration) (int, string) {
	s.t.Helper()
	s.n++
	outPath := filepath.Join(s.dir, fmt.Sprintf("%s-%02d.out", s.name, s.n))
	mark := fmt.Sprintf("__walk_%s_%d", s.name, s.n)
	if _, err := fmt.Fprintf(s.in, "{ %s\n} </dev/null >%q 2>&1; echo %s $?\n", line, outPath, mark); err != nil {
		s.t.Fatalf("shell %s: %v", s.name, err)
	}
	timeout := time.After(d)
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				s.t.Fatalf("shell %s ended during %q", s.name, line)
			}
			if rc, found := strings.CutPrefix(l, mark+" "); found {
				b, _ := os.ReadFile(outPath)
				code, _ := strconv.Atoi(rc)
				return code, string(b)
			}
		case <-timeout:
			b, _ := os.ReadFile(outPath)
			s.t.Fatalf("shell %s: %q did not finish within %v; its output so far:\n%s", s.name, line, d, b)
		}
	}
}

// must runs line and fails the test unless it exits 0.
func (s *walkShell) must(line string, d time.Duration) string {
	s.t.Helper()
	code, out := s.run(line, d)
	if code != 0 {
		s.t.Fatalf("shell %s: %q exited %d:\n%s", s.name, line, code, out)
	}
	return out
}

// environ is the shell's environment now (its exports), for what the test
// runs as the shell's child would: Claude Code started there, a check.
func (s *walkShell) environ() []string {
	s.t.Helper()
	path := filepath.Join(s.dir, fmt.Sprintf("%s-env-%d", s.name, s.n+1))
	s.must("env -0 >"+strconv.Quote(path), cmdTimeout)
	b, err := os.ReadFile(path)
	if err != nil {
		s.t.Fatal(err)
	}
	var out []string
	for _, kv := range strings.Split(string(b), "\x00") {
		if kv != "" {
			out = append(out, kv)
		}
	}
	return out
}

// lastJob is `$!` in the shell: the pid of the last job it started.
func (s *walkShell) lastJob() int {
	s.t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(s.must("echo $!", cmdTimeout)))
	if err != nil {
		s.t.Fatalf("shell %s: $!: %v", s.name, err)
	}
	return pid
}

// close ends the shell: exit, then SIGKILL if it does not go in time. It
// always waits for bash and its reader.
func (s *walkShell) close() {
	fmt.Fprintln(s.in, "exit 0")
	s.in.Close()
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
	s.cmd.Wait()
}
