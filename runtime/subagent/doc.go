// Package subagent is the room of a harn session's children: isolated
// child runs that a parent starts with the `agent` tool and that end by
// reporting a validated handoff with the `handoff` tool. Its Manager,
// hosted by the node, enforces the limit of running children (per parent
// session and per node), owns each child's lifecycle state, cancellation,
// waiters and recovery after a restart, and keeps the child records and
// their handoffs in a Store (the node's Pebble). It runs no model and
// stores no conversation: a Runner (node/tasks) executes each child as a
// harn task, and the child's context is its own. See DESIGN.md.
package subagent
