// Package tasks is the node's room for task runtimes: it hosts one
// runtime.Runtime for every runtime session of the node, an executor
// (runtime/exec) per session that runs an agent command, the
// Pebble-backed runtime ledger, the hook path's decisions for external
// agents (Decide), and the open permission requests that an operator can
// answer from anywhere in the mesh (Approvals).
//
// It knows nothing of gRPC or the mesh: the node turns its Action and
// Result into RPCs, routes remote actions after the mesh's authentication,
// feeds its canonical events into the node's ingest (Sink) and reads its
// task views into the roster (Brief). See runtime/DESIGN.md, "Hosted by
// the node".
//
// At start, Recover closes what the previous run left open and Rebuild
// restores the task records, their text and output so far (keyspace
// taskview) and the unknown-outcome holds from the runtime ledger: a task
// the restart cut short reads interrupted (reason node_restart). See
// runtime/DESIGN.md, "After a restart".
package tasks
