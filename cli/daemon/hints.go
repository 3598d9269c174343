package daemon

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/presence/adapter/all"
)

// NodeHints are what a node's start tells a person to run next. Each is a
// command line that reaches this node from any shell, as printed: harn is
// named as a shell finds it, and a data dir or socket that is not the
// default is passed as a flag.
type NodeHints struct {
	// WebURL prints the board's URL with its token.
	WebURL string
	// Next are the commands to run next, in order.
	Next []string
	// Env is set, for a node not on the default data dir or socket, to
	// the variables an agent's environment needs for its hooks to report
	// to this node (HARN_DATA_DIR=..., HARN_SOCKET=...).
	Env string
}

// HintsFor are the hints of the node on dataDir and socket, naming harn
// as harnCommand does for the executable running now.
func HintsFor(dataDir, socket string) NodeHints {
	exe, _ := os.Executable()
	return hintsFor(harnCommand(exe, exec.LookPath), dataDir, socket)
}

func hintsFor(harn, dataDir, socket string) NodeHints {
	var at, env []string
	if def, err := filepath.Abs(layout.DefaultDataDir()); err != nil || def != dataDir {
		at = append(at, "--data-dir", hook.ShellQuote(dataDir))
		env = append(env, "HARN_DATA_DIR="+hook.ShellQuote(dataDir))
	}
	if socket != layout.DefaultSocket(dataDir) {
		at = append(at, "--socket", hook.ShellQuote(socket))
		env = append(env, "HARN_SOCKET="+hook.ShellQuote(socket))
	}
	cmd := func(words ...string) string {
		return strings.Join(append(append([]string{harn}, words...), at...), " ")
	}
	h := NodeHints{WebURL: cmd("web", "url"), Env: strings.Join(env, " ")}
	if len(at) == 0 {
		// Hooks reach the default node: wire an agent, then look.
		h.Next = append(h.Next, harn+" hook install "+firstAgent())
	}
	h.Next = append(h.Next, cmd("agents", "list"))
	return h
}

// firstAgent is the agent a hint wires: the first installable one
// (presence/adapter/all), as the help's examples name.
func firstAgent() string {
	if a := all.Installable(); len(a) > 0 {
		return a[0]
	}
	return "AGENT"
}

// harnCommand is how a hint names harn, for exe (harnd, or harn): "harn"
// when PATH finds the harn beside exe, or a file with the same bytes (a
// `make install` copy of this build); else that harn's absolute path; and
// "harn" when there is no harn beside exe.
func harnCommand(exe string, lookPath func(string) (string, error)) string {
	beside := filepath.Join(filepath.Dir(exe), "harn")
	b, err := os.Stat(beside)
	if exe == "" || err != nil || b.IsDir() {
		return "harn"
	}
	p, err := lookPath("harn")
	if err != nil {
		return beside
	}
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	a, err := os.Stat(p)
	if err != nil {
		return beside
	}
	if os.SameFile(a, b) || (a.Size() == b.Size() && sameBytes(p, beside)) {
		return "harn"
	}
	return beside
}

// sameBytes says whether files a and b hold the same bytes (read in
// chunks; a read error is a difference).
func sameBytes(a, b string) bool {
	fa, err := os.Open(a)
	if err != nil {
		return false
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return false
	}
	defer fb.Close()
	ba, bb := make([]byte, 256<<10), make([]byte, 256<<10)
	for i := 0; i < 1<<14; i++ { // at most 4 GiB
		na, ea := io.ReadFull(fa, ba)
		nb, eb := io.ReadFull(fb, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false
		}
		if ea != nil || eb != nil {
			return ea == eb || (na == nb && (ea == io.EOF || ea == io.ErrUnexpectedEOF) && (eb == io.EOF || eb == io.ErrUnexpectedEOF))
		}
	}
	return false
}
