// Package presence is the session-state model of harn: the canonical event,
// its validation, the one transition reducer (Step and Fold), the lifecycle
// rules, the session-name projection and its observation (ShownNames), the
// presence hash, and what readers derive for a roster without changing a
// folded state (SilentSince, SurfaceChildren).
//
// The package is pure. It performs no I/O, reads no clock and starts no
// goroutine; everything it needs (time, digests) is passed in. The live
// projection in the node and every replay call the same reducer, so a
// session's state is a function of its set of events and nothing else.
package presence
