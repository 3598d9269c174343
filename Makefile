GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS   := -s -w -X github.com/harn-dev/harn/cli.version=$(VERSION) -X github.com/harn-dev/harn/cli.commit=$(COMMIT)
BINDIR    ?= bin
BIN       ?= $(BINDIR)/harn
PREFIX    ?= $(HOME)/.local
CLIENT_TAGS ?= grpcnotrace

.PHONY: build install test bench lint run proto fuzz clean docker

# build: the client (bin/harn) and the daemon (bin/harnd), side by side:
# `harn node` runs the harnd beside it. The client is built with
# $(CLIENT_TAGS): grpcnotrace leaves out golang.org/x/net/trace (which the
# client never turns on), and with it the template code its init makes
# reachable: a 3 MB smaller binary that every hook starts.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -tags '$(CLIENT_TAGS)' -ldflags '$(LDFLAGS)' -o $(BINDIR)/ ./cmd/harn
	CGO_ENABLED=0 $(GO) build -trimpath -tags 'harn_hook $(CLIENT_TAGS)' -ldflags '$(LDFLAGS)' -o $(BINDIR)/ ./cmd/harn-hook
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BINDIR)/ ./cmd/harnd

# install: harn and harnd into $(PREFIX)/bin (default ~/.local/bin).
install: build
	install -d $(PREFIX)/bin
	install -m 0755 $(BINDIR)/harn $(BINDIR)/harn-hook $(BINDIR)/harnd $(PREFIX)/bin/

test:
	$(GO) test -race -timeout 15m ./...

# bench: every benchmark, the mesh's first (docs/perf-mesh.md): a real
# mesh's idle CPU and memory per node and the server's against bare
# memberlist processes at 5 and 50 nodes, then the simulation's table at
# 10, 100 and 1,000 nodes (about 25 minutes of both cores together).
bench: build
	HARN_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^$$' -bench 'MeshIdle' -benchtime 1x -timeout 30m ./cli/e2e/
	$(GO) test -run '^$$' -bench 'MeshSimulation' -benchtime 1x -timeout 60m ./node/cluster/
	GOMAXPROCS=1 $(GO) test -run '^$$' -bench Fold -benchmem ./presence/
	HARN_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^$$' -bench . -skip 'MeshIdle|MeshSimulation' -timeout 60m ./node/... ./cli/...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

run: build
	./$(BIN) node

proto:
	cd node/api && PATH=$$PATH:$$($(GO) env GOPATH)/bin protoc --go_out=. --go_opt=paths=source_relative values.proto hook.proto task.proto harn.proto cluster.proto local.proto dirtrust.proto hosted.proto
	cd node/api/apigrpc && PATH=$$PATH:$$($(GO) env GOPATH)/bin protoc -I . -I .. --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative services.proto hosted_services.proto
	$(GO) build -o $$($(GO) env GOPATH)/bin/ ./internal/cmd/protoc-gen-harnlocal
	cd node/api && PATH=$$PATH:$$($(GO) env GOPATH)/bin protoc --harnlocal_out=client=Local/Client+MeshAdmin/AdminClient+Hosted/HostedClient,paths=source_relative:. local.proto
	cd node/api && PATH=$$PATH:$$($(GO) env GOPATH)/bin protoc --harnlocal_out=package=hookwire,import=github.com/harn-dev/harn/node/api/hookwire,light=AppendRequest+AppendResponse+DiagnoseRequest+DiagnoseResponse+DecideRequest+DecideResponse+ApprovalRequest+ApprovalResponse+LocalCall+LocalReply:hookwire local.proto
	gofmt -w node/api/*.harn.go node/api/hookwire/*.harn.go

fuzz:
	./scripts/fuzz-all.sh 20s

# docker: the static binaries into deploy/ and the FROM scratch image harn:dev.
docker:
	CGO_ENABLED=0 $(GO) build -trimpath -tags '$(CLIENT_TAGS)' -ldflags '$(LDFLAGS)' -o deploy/ ./cmd/harn
	CGO_ENABLED=0 $(GO) build -trimpath -tags 'harn_hook $(CLIENT_TAGS)' -ldflags '$(LDFLAGS)' -o deploy/ ./cmd/harn-hook
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o deploy/ ./cmd/harnd
	docker build -t harn:dev deploy

clean:
	rm -rf $(BINDIR) deploy/harn deploy/harn-hook deploy/harnd
