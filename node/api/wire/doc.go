// Package wire holds the Go bodies that travel as JSON inside the node's
// gRPC messages (the *_json fields of harn.proto): coordination, mesh admin,
// mesh views, notification views, roster read info, diagnostics, and the
// conversion of events to and from api.Event. They moved here, unchanged in
// shape and JSON, from the packages that serve them, so that the client
// (harn) decodes them without linking the daemon; package node names them
// by alias. Each is a candidate for a protobuf message of its own.
package wire
