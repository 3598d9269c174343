// Package api holds the node's gRPC service definitions and their generated
// code, committed so that a build needs no protoc. Run `make proto` (or go
// generate) after editing a .proto file. It is the whole contract between
// harn's processes and imports nothing of the daemon.
package api

//go:generate protoc --go_out=. --go_opt=paths=source_relative values.proto hook.proto task.proto harn.proto cluster.proto local.proto dirtrust.proto
