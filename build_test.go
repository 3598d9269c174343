package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestTheClientBuildLeavesOutGRPCTrace: `make build` (and `make docker`)
// build every binary with the grpcnotrace tag, which leaves
// golang.org/x/net/trace out (nothing turns gRPC tracing on) and with it
// the html/template that package's init makes reachable.
func TestTheClientBuildLeavesOutGRPCTrace(t *testing.T) {
	mk, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mk), "TAGS      ?= grpcnotrace") {
		t.Error("Makefile: TAGS does not default to grpcnotrace")
	}
	for _, l := range strings.Split(string(mk), "\n") {
		if strings.Contains(l, " build ") && strings.Contains(l, "./cmd/") && !strings.Contains(l, "$(TAGS)'") {
			t.Errorf("Makefile builds without -tags '$(TAGS)': %s", strings.TrimSpace(l))
		}
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to list harn's dependencies")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-tags", "grpcnotrace", "./cmd/harnd").Output()
	if err != nil {
		t.Fatalf("go list -deps -tags grpcnotrace ./cmd/harnd: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "golang.org/x/net/trace" {
			t.Error("harnd built with grpcnotrace still links golang.org/x/net/trace")
		}
	}
}

// TestHarnHookLinksOnlyTheHook: harn-hook (cmd/harn-hook, which links
// cli/hook and not cli) links neither gRPC, nor the protobuf runtime, nor
// node/api, nor the TUI: the process that every tool call of every agent
// starts pays for the hook alone. And harn itself links no gRPC: it
// speaks the local wire.
func TestHarnHookLinksOnlyTheHook(t *testing.T) {
	mk, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mk), "-o $(BINDIR)/ ./cmd/harn-hook") {
		t.Error("Makefile: make build does not write bin/harn-hook")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to list the dependencies")
	}
	out, err := exec.Command(goTool, "list", "-deps", "./cmd/harn-hook").Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/harn-hook: %v", err)
	}
	banned := []string{"google.golang.org/grpc", "google.golang.org/protobuf", "github.com/charmbracelet",
		"github.com/harn-dev/harn/node/api/wire", "github.com/cockroachdb/pebble", "github.com/hashicorp",
		"github.com/harn-dev/harn/cli/tui"}
	for _, dep := range strings.Fields(string(out)) {
		for _, b := range banned {
			if dep == b || strings.HasPrefix(dep, b+"/") {
				t.Errorf("harn-hook links %s", dep)
			}
		}
		if dep == "github.com/harn-dev/harn/cli" {
			t.Error("harn-hook links cli; it links cli/hook alone")
		}
		if dep == "github.com/harn-dev/harn/node/api" {
			t.Error("harn-hook links node/api (its descriptors); the hook speaks node/api/hookwire")
		}
	}
	out, err = exec.Command(goTool, "list", "-deps", "-tags", "grpcnotrace", "./cmd/harn").Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/harn: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "google.golang.org/grpc" || strings.HasPrefix(dep, "google.golang.org/grpc/credentials") || strings.HasPrefix(dep, "google.golang.org/grpc/internal/transport") {
			t.Errorf("harn links %s: the client speaks the local wire, not gRPC", dep)
		}
	}
}

// serverCode are the packages only harnd links: the board (and with it
// html/template), gRPC, the external agents' process runner and the
// stores. A client that links one pays its inits at every start.
var serverCode = []string{
	"html/template", "google.golang.org/grpc", "github.com/harn-dev/harn/node/board",
	"github.com/harn-dev/harn/runtime/exec", "github.com/cockroachdb/pebble",
	"github.com/hashicorp/raft", "github.com/hashicorp/memberlist",
}

// TestClientsLinkNoServerCode: `go list -deps` of harn and of harn-hook,
// with no build tags, names none of serverCode, nor a package below one
// outside this module (node/board/boardlimits, the board's numbers, is
// the client's).
func TestClientsLinkNoServerCode(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to list the dependencies")
	}
	for _, bin := range []string{"./cmd/harn", "./cmd/harn-hook"} {
		args := []string{"list", "-deps", bin}
		out, err := exec.Command(goTool, args...).Output()
		if err != nil {
			t.Fatalf("go %s: %v", strings.Join(args, " "), err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, b := range serverCode {
				if dep == b || strings.HasPrefix(dep, b+"/") && !strings.HasPrefix(b, "github.com/harn-dev/") {
					t.Errorf("%s links %s, server code", bin, dep)
				}
			}
		}
	}
}

// clientCode are the packages only harn links: its command line and the
// TUI with its renderers. The daemon that pays their inits and size
// reads no terminal.
var clientCode = []string{
	"github.com/harn-dev/harn/cli", "github.com/harn-dev/harn/cli/tui",
	"github.com/charmbracelet/glamour", "github.com/charmbracelet/bubbletea", "github.com/charmbracelet/lipgloss",
}

// TestHarndLinksNoTUI: `go list -deps ./cmd/harnd` names neither harn's
// command line (package cli) nor the TUI and its renderers; harnd's
// command line is cli/daemon on cli/hook.
func TestHarndLinksNoTUI(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to list the dependencies")
	}
	out, err := exec.Command(goTool, "list", "-deps", "./cmd/harnd").Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/harnd: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, b := range clientCode {
			if dep == b || strings.HasPrefix(dep, b+"/") && !strings.HasPrefix(b, "github.com/harn-dev/") {
				t.Errorf("harnd links %s, client code", dep)
			}
		}
	}
}
