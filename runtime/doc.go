// Package runtime holds harn's task runtimes: the room where one top-level
// request of a session runs as a task, with its own capability snapshot,
// grants, admission, cancellation barrier and ledger records.
//
// A session runs one top-level task at a time. Operator actions (Start,
// Steer, FollowUp, Supersede, Resume, Cancel, Replace, Confirm, Deny, Ack,
// Reduce) and the executor's reports (Next, Begin, End, AckAbort, Say,
// Finish) all go through one Runtime value, from any goroutine; the node
// hosts it and routes remote actions to it. Before every capability call
// the executor asks Check or Begin, which checks the catalog generation,
// contract hash, provider binding, grant and load state against the task's
// snapshot and the live global overrides (revocations, disabled providers).
//
// The package knows nothing of the mesh, of gRPC or of the node. Time comes
// from an injected Clock; evidence goes to an injected Ledger as keyed
// digests. See DESIGN.md for the state machine and the barrier.
package runtime
