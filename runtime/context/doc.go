// Package context is the context room of harn's own agent loop: the
// lossless history of a session and the bounded working set the loop sends
// to the model. Every message, tool call, tool result, steer, instruction
// snapshot and checkpoint is appended to a Store and never deleted; the
// working set is a view of that history, rebuilt byte for byte after a
// restart. Compaction (LLM condensation, the deterministic fallback, the
// rolling summary of last resort) only appends checkpoints. Lanes share
// immutable prefix items: forking copies nothing. See DESIGN.md.
package context
