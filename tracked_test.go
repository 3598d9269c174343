package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// executableMagics are the first bytes of the executable and object formats
// a Go build writes (ELF, Mach-O in both byte orders and widths, fat Mach-O,
// PE).
var executableMagics = [][]byte{
	{0x7f, 'E', 'L', 'F'},
	{0xfe, 0xed, 0xfa, 0xce}, {0xfe, 0xed, 0xfa, 0xcf},
	{0xce, 0xfa, 0xed, 0xfe}, {0xcf, 0xfa, 0xed, 0xfe},
	{0xca, 0xfe, 0xba, 0xbe},
	{'M', 'Z'},
}

// isExecutableBinary reports whether head starts like a compiled program.
func isExecutableBinary(head []byte) bool {
	for _, m := range executableMagics {
		if bytes.HasPrefix(head, m) {
			return true
		}
	}
	return false
}

// TestNoTrackedFileIsAnExecutableBinary: the tree holds sources, never a
// built program (bin/, harn-hook, harnd): `make build` writes those, and a
// committed one goes stale and bloats every clone.
func TestNoTrackedFileIsAnExecutableBinary(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git to list the tracked files")
	}
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		f, err := os.Open(name)
		if err != nil {
			continue // deleted in the work tree
		}
		head := make([]byte, 4)
		n, _ := f.Read(head)
		f.Close()
		if isExecutableBinary(head[:n]) {
			t.Errorf("%s is a tracked executable binary: run `git rm --cached %s` (make build writes it)", name, name)
		}
	}
}

// TestIsExecutableBinarySeesAnELF: the check above recognises the binary
// this very test runs as, and passes a text file.
func TestIsExecutableBinarySeesAnELF(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Skip(err)
	}
	if !isExecutableBinary(b[:4]) {
		t.Errorf("the test binary %s is not seen as an executable", self)
	}
	if isExecutableBinary([]byte("package main")) {
		t.Error("a Go source is seen as an executable")
	}
}
