package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommittedCodeIsGenerated: the committed local.harn.go and the
// hook's messages are what this generator writes from the committed
// .proto files, as `make proto` runs it. It needs protoc (apt-get install
// protobuf-compiler) and skips without it.
func TestCommittedCodeIsGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the generator and runs protoc")
	}
	protoc, err := exec.LookPath("protoc")
	if err != nil {
		t.Skip("no protoc on PATH")
	}
	api, err := filepath.Abs("../../../node/api")
	if err != nil {
		t.Fatal(err)
	}
	mk, err := os.ReadFile("../../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	plugin := filepath.Join(tmp, "protoc-gen-harnlocal")
	if out, err := exec.Command("go", "build", "-o", plugin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	// The two runs of `make proto`, with their parameters as written there.
	var runs int
	for _, line := range strings.Split(string(mk), "\n") {
		_, args, ok := strings.Cut(line, "protoc --harnlocal_out=")
		if !ok {
			continue
		}
		params, rest, _ := strings.Cut(args, ":")
		outDir, files, _ := strings.Cut(rest, " ")
		gen := filepath.Join(tmp, "out", outDir)
		if err := os.MkdirAll(gen, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(protoc, "--plugin=protoc-gen-harnlocal="+plugin, "--harnlocal_out="+params+":"+gen)
		cmd.Args = append(cmd.Args, strings.Fields(files)...)
		cmd.Dir = api
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("protoc: %v\n%s", err, out)
		}
		ents, _ := os.ReadDir(gen)
		for _, e := range ents {
			got := filepath.Join(gen, e.Name())
			if out, err := exec.Command("gofmt", "-w", got).CombinedOutput(); err != nil {
				t.Fatalf("gofmt: %v\n%s", err, out)
			}
			a, _ := os.ReadFile(got)
			b, err := os.ReadFile(filepath.Join(api, outDir, e.Name()))
			if err != nil || !bytes.Equal(a, b) {
				t.Errorf("node/api/%s is not what the generator writes (%v): run make proto", filepath.Join(outDir, e.Name()), err)
			}
		}
		runs++
	}
	if runs != 2 {
		t.Fatalf("found %d protoc-gen-harnlocal runs in the Makefile, want 2", runs)
	}
}
