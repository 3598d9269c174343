package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestTheClientBuildLeavesOutGRPCTrace: `make build` (and `make docker`)
// build harn with the grpcnotrace tag, which leaves golang.org/x/net/trace
// out of the client (harn never turns gRPC tracing on) and with it the
// template code that package's init makes reachable: the binary every hook
// starts is about 3 MB smaller. harnd is built without it.
func TestTheClientBuildLeavesOutGRPCTrace(t *testing.T) {
	mk, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mk), "CLIENT_TAGS ?= grpcnotrace") {
		t.Error("Makefile: CLIENT_TAGS does not default to grpcnotrace")
	}
	for _, l := range strings.Split(string(mk), "\n") {
		if strings.Contains(l, "build") && strings.HasSuffix(strings.TrimSpace(l), "./cmd/harn") && !strings.Contains(l, "-tags '$(CLIENT_TAGS)'") {
			t.Errorf("Makefile builds harn without -tags '$(CLIENT_TAGS)': %s", strings.TrimSpace(l))
		}
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to list harn's dependencies")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-tags", "grpcnotrace", "./cmd/harn").Output()
	if err != nil {
		t.Fatalf("go list -deps -tags grpcnotrace ./cmd/harn: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "golang.org/x/net/trace" {
			t.Error("harn built with grpcnotrace still links golang.org/x/net/trace")
		}
	}
}
