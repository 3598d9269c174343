// Package api holds the contract between harn's processes: the protobuf
// messages, the local wire's services (local.proto) with their generated
// client, server interfaces and handler tables (local.harn.go), and the
// generated code, committed so that a build needs no protoc. Run `make
// proto` after editing a .proto file. It imports nothing of the daemon.
package api
