package agent

// This file is temporary: a minimal tool box (read and shell) so that the
// loop runs end to end until the tool box of package runtime/agent/tools
// is wired in its place (node/tasks builds the box with NewMiniBox).

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/harn-dev/harn/runtime/agent/tools"
)

// Bounds of the mini box.
const (
	miniMaxOutput = 64 << 10
	miniShellTime = 2 * time.Minute
)

var (
	readSchema  = json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"file path, relative to the session's directory"}},"required":["path"]}`)
	shellSchema = json.RawMessage(`{"type":"object","properties":{"command":{"type":"string","description":"a shell command line, run with sh -c"}},"required":["command"]}`)
)

func hashOf(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// MiniBox is the temporary tool box: read and shell.
type MiniBox struct{ specs []tools.Spec }

// NewMiniBox returns the temporary tool box.
func NewMiniBox() *MiniBox {
	return &MiniBox{specs: []tools.Spec{
		{Name: "read", Description: "Read a text file.", Schema: readSchema, Provider: "core", Hash: hashOf(readSchema)},
		{Name: "shell", Description: "Run a shell command in the session's directory; its output is returned.", Schema: shellSchema,
			Mutating: true, Provider: "core", Hash: hashOf(shellSchema)},
	}}
}

var _ tools.Box = (*MiniBox)(nil)

// Specs are read and shell.
func (b *MiniBox) Specs(_, _ string) []tools.Spec { return b.specs }

// Prompt activates nothing.
func (b *MiniBox) Prompt(_, _, _ string) []string { return nil }

// Instructions are none.
func (b *MiniBox) Instructions(_, _ string) []string { return nil }

// EndStep does nothing.
func (b *MiniBox) EndStep(_, _ string) {}

// Run runs read or shell.
func (b *MiniBox) Run(ctx context.Context, c tools.Call) (tools.Result, error) {
	var in struct {
		Path    string `json:"path"`
		Command string `json:"command"`
	}
	if err := json.Unmarshal(c.Args, &in); err != nil {
		return tools.Result{Content: "arguments are not a JSON object: " + err.Error(), IsError: true}, nil
	}
	switch c.Name {
	case "read":
		p := in.Path
		if !filepath.IsAbs(p) {
			p = filepath.Join(c.Dir, p)
		}
		f, err := os.Open(p)
		if err != nil {
			return tools.Result{Content: err.Error(), IsError: true}, nil
		}
		defer f.Close()
		buf := make([]byte, miniMaxOutput)
		n, _ := f.Read(buf)
		return tools.Result{Content: string(buf[:n])}, nil
	case "shell":
		return miniShell(ctx, c.Dir, in.Command)
	}
	return tools.Result{Content: "no tool " + c.Name, IsError: true}, nil
}

func miniShell(ctx context.Context, dir, command string) (tools.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, miniShellTime)
	defer cancel()
	cmd := osexec.Command("sh", "-c", command)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return tools.Result{Content: err.Error(), IsError: true}, nil
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return tools.Result{Content: "killed: " + ctx.Err().Error(), IsError: true}, ctx.Err()
	}
	s := out.String()
	if len(s) > miniMaxOutput {
		s = s[:miniMaxOutput]
	}
	if err != nil {
		return tools.Result{Content: fmt.Sprintf("%s\n%v", s, err), IsError: true}, nil
	}
	return tools.Result{Content: s}, nil
}
